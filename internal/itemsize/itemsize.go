package itemsize

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

const (
	// documentOverhead is the overhead of a List or Map value, whatever
	// it holds; elementOverhead is the overhead of each of its elements.
	documentOverhead = 3
	elementOverhead  = 1
	// maxNumberSize caps a number's size: 38 significant digits take at
	// most 20 bytes of digits and exponent, and a negative number one more.
	maxNumberSize = 21
)

// ItemSize returns the size in bytes of an item as DynamoDB limits and
// bills it: the sum, over its attributes, of the UTF-8 length of the
// attribute name and the size of the value. A nil or empty item has size 0.
//
// Value sizes follow "DynamoDB item sizes and formats":
//
//   - S: the UTF-8 length of the string.
//   - N: 1 byte per two significant digits, plus 1 byte (see [numberSize]
//     for the exact rule the page calls "approximately"); zero is 1 byte.
//   - B: the raw length (not the base64 length on the wire).
//   - BOOL and NULL: 1 byte.
//   - L and M: 3 bytes, plus each element's size and 1 byte per element;
//     a map element's size includes the UTF-8 length of its key.
//   - SS, NS and BS: the sum of the sizes of the elements.
func ItemSize(item map[string]types.AttributeValue) int {
	size := 0
	for name, v := range item {
		size += len(name) + AttributeSize(v)
	}
	return size
}

// AttributeSize returns the size of one attribute value, without its name,
// by the rules of [ItemSize]. A nil value has size 0.
func AttributeSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		size := documentOverhead
		for _, e := range v.Value {
			size += AttributeSize(e) + elementOverhead
		}
		return size
	case *types.AttributeValueMemberM:
		size := documentOverhead
		for k, e := range v.Value {
			size += len(k) + AttributeSize(e) + elementOverhead
		}
		return size
	case *types.AttributeValueMemberSS:
		size := 0
		for _, e := range v.Value {
			size += len(e)
		}
		return size
	case *types.AttributeValueMemberNS:
		size := 0
		for _, e := range v.Value {
			size += numberSize(e)
		}
		return size
	case *types.AttributeValueMemberBS:
		size := 0
		for _, e := range v.Value {
			size += len(e)
		}
		return size
	}
	return 0
}

// numberSize is the size of a number. DynamoDB stores a number as base-100
// digits aligned on the decimal point, plus one byte of exponent, plus one
// byte of terminator for a negative number. Leading and trailing zeroes are
// trimmed. So 7, 10 and 1000 take 2 bytes (one digit pair each), 123 and
// 1.5 take 3 (two pairs: 1|23 and 1.|5), and -1 takes 3. This is the rule
// behind the documentation's "approximately 1 byte per two significant
// digits, plus 1 byte"; it was worked out from DynamoDB's behaviour by
// third parties (Zac Charles, "Calculating a DynamoDB item's size and
// consumed capacity") and tests check it against DynamoDB Local. A string
// that is not a number gets the documented approximation of its length.
func numberSize(s string) int {
	n, ok := ParseNumber(s)
	if !ok {
		return (len(s)+1)/2 + 1
	}
	if n.Digits == "" {
		return 1
	}
	high := n.Exp + len(n.Digits) - 1 // power of ten of the first digit
	pairs := floorDiv2(high) - floorDiv2(n.Exp) + 1
	size := pairs + 1
	if n.Negative {
		size++
	}
	return min(size, maxNumberSize)
}

func floorDiv2(x int) int {
	if x < 0 {
		return -((1 - x) / 2)
	}
	return x / 2
}

// ActionTable returns the table a transaction's action names (nil for an
// empty action). Billing and telemetry both attribute an action to it.
func ActionTable(it types.TransactWriteItem) *string {
	switch {
	case it.Put != nil:
		return it.Put.TableName
	case it.Update != nil:
		return it.Update.TableName
	case it.Delete != nil:
		return it.Delete.TableName
	case it.ConditionCheck != nil:
		return it.ConditionCheck.TableName
	}
	return nil
}
