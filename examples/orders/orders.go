// Package orders is the order workflow of the demo (make run, cmd/demo),
// which the sample worker (examples/hello) serves too.
//
// ProcessOrder validates an order, reserves its lines at once (fan-out,
// fan-in), charges the card with a retry policy (the gateway times out on
// the first attempt of every order), runs the sub-orchestration ShipOrder
// (a label, a durable timer for the carrier pickup, a notice) and then
// races the DeliveryConfirmed event against a timer. A declined card
// releases the reservations and fails the order. Each stage sets the custom
// status and the KV key [KVState]. The activities come from a [Shop], the
// outside world they talk to.
//
// With the sample worker running, from the command line:
//
//	duradyn start ProcessOrder order-1 --input '{"id":"order-1","customer":"Ada","card":"4242-4242-4242-4242","lines":[{"sku":"KB-87","qty":1,"price_cents":12900}]}'
//	duradyn raise order-1 DeliveryConfirmed --data '{"signed_by":"Ada"}'
//	duradyn wait order-1
package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// The workflow's names, timings and the states the orders report.
const (
	ActValidate = "ValidateOrder"
	ActReserve  = "ReserveItem"
	ActRelease  = "ReleaseItem"
	ActCharge   = "ChargePayment"
	ActLabel    = "CreateLabel"
	ActNotify   = "NotifyCustomer"

	// EventDelivery is the external event ProcessOrder waits for once it
	// reports StatusAwaitingDelivery (the demo's client raises it then).
	EventDelivery = "DeliveryConfirmed"

	// Custom statuses (what an order is doing now).
	StatusValidating       = "validating"
	StatusReserving        = "reserving"
	StatusCharging         = "charging"
	StatusCompensating     = "compensating"
	StatusShipping         = "shipping"
	StatusAwaitingDelivery = "awaiting-delivery"
	StatusDelivered        = "delivered"
	StatusAwaitingPickup   = "awaiting-pickup" // ShipOrder's

	// KVState is the KV key holding what an order has achieved so far.
	KVState = "order_state"

	// pickupDelay is ShipOrder's durable timer; deliveryTimeout the timer
	// that races the delivery confirmation. The demo's client cancels
	// order-3 while its ShipOrder waits for pickup, just after node-a has
	// stopped: a wake-up the receive node-a left in flight takes goes back
	// to the queue half a second later (package queues), and one it took
	// as its provider closed comes back after the receive's 2 s visibility
	// timeout, so the pickup waits longer than that for the cancellation
	// to reach it.
	pickupDelay     = 4 * time.Second
	deliveryTimeout = 20 * time.Second

	// DeclinedCard is the card the payment gateway declines.
	DeclinedCard = "4000-0000-0000-0002"
)

// paymentRetry retries ChargePayment on errors (a timeout of the gateway),
// not on a decline, which is a result.
var paymentRetry = durable.RetryPolicy{
	MaxAttempts: 3,
	Backoff:     durable.Backoff{Kind: durable.BackoffExponential, Base: 200 * time.Millisecond},
}

// Order is ProcessOrder's input.
type Order struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Card     string `json:"card"`
	Lines    []Line `json:"lines"`
}

// Line is one article of an order.
type Line struct {
	SKU        string `json:"sku"`
	Qty        int    `json:"qty"`
	PriceCents int    `json:"price_cents"`
}

// Validation is ValidateOrder's result.
type Validation struct {
	TotalCents int    `json:"total_cents"`
	Node       string `json:"node"`
}

// ItemRequest is the input of ReserveItem and ReleaseItem.
type ItemRequest struct {
	Order string `json:"order"`
	SKU   string `json:"sku"`
	Qty   int    `json:"qty"`
}

// Reservation is ReserveItem's result.
type Reservation struct {
	SKU  string `json:"sku"`
	Hold string `json:"hold"`
	Node string `json:"node"`
}

// Release is ReleaseItem's result.
type Release struct {
	Hold string `json:"hold"`
	Node string `json:"node"`
}

// ChargeRequest is ChargePayment's input.
type ChargeRequest struct {
	Order       string `json:"order"`
	Card        string `json:"card"`
	AmountCents int    `json:"amount_cents"`
}

// Payment is ChargePayment's result: a decline is a result, not an error.
type Payment struct {
	Approved bool   `json:"approved"`
	AuthCode string `json:"auth_code,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Node     string `json:"node"`
}

// ShipRequest is ShipOrder's input.
type ShipRequest struct {
	Order    string `json:"order"`
	Customer string `json:"customer"`
	Items    int    `json:"items"`
}

// Label is CreateLabel's result.
type Label struct {
	Tracking string `json:"tracking"`
	Carrier  string `json:"carrier"`
	Node     string `json:"node"`
}

// Notice is NotifyCustomer's result.
type Notice struct {
	Sent string `json:"sent"`
	Node string `json:"node"`
}

// Shipment is ShipOrder's result.
type Shipment struct {
	Tracking string `json:"tracking"`
	Carrier  string `json:"carrier"`
}

// Delivery is the payload of the DeliveryConfirmed event.
type Delivery struct {
	SignedBy string `json:"signed_by"`
}

// Receipt is ProcessOrder's result.
type Receipt struct {
	Order      string `json:"order"`
	TotalCents int    `json:"total_cents"`
	AuthCode   string `json:"auth_code"`
	Tracking   string `json:"tracking"`
	Delivery   string `json:"delivery"`
}

// ProcessOrder is the order workflow; ShipOrder its sub-orchestration.
var (
	ProcessOrder = durable.NewOrchestration("ProcessOrder", processOrderFn, durable.Version("1.0.0"))
	ShipOrder    = durable.NewOrchestration("ShipOrder", shipOrderFn, durable.Version("1.0.0"))
)

// ShipInstance is the instance id of an order's ShipOrder.
func ShipInstance(order string) string { return order + "-ship" }

func processOrderFn(ctx *durable.OrchestrationContext, o Order) (Receipt, error) {
	log := ctx.Logger()
	kv := ctx.KV()

	ctx.SetCustomStatus(StatusValidating)
	log.Info(fmt.Sprintf("order received: %d lines for %s", len(o.Lines), o.Customer))
	v, err := durable.CallActivity[Validation](ctx, ActValidate, o).Get(ctx)
	if err != nil {
		kv.Set(KVState, "rejected")
		return Receipt{}, fmt.Errorf("invalid order: %w", err)
	}
	kv.Set(KVState, "validated")

	// Fan-out / fan-in: one reservation per line, all at once.
	ctx.SetCustomStatus(StatusReserving)
	log.Info(fmt.Sprintf("order valid (%s); reserving %d items in parallel", Money(v.TotalCents), len(o.Lines)))
	reserving := make([]durable.Future[Reservation], len(o.Lines))
	for i, l := range o.Lines {
		reserving[i] = durable.CallActivity[Reservation](ctx, ActReserve, ItemRequest{Order: o.ID, SKU: l.SKU, Qty: l.Qty})
	}
	held, err := durable.AwaitAll(ctx, reserving...)
	if err != nil {
		kv.Set(KVState, "out-of-stock")
		return Receipt{}, fmt.Errorf("reservation failed: %w", err)
	}
	kv.Set(KVState, "reserved")

	ctx.SetCustomStatus(StatusCharging)
	log.Info(fmt.Sprintf("%d items reserved; charging %s", len(held), Money(v.TotalCents)))
	pay, err := durable.CallActivity[Payment](ctx, ActCharge,
		ChargeRequest{Order: o.ID, Card: o.Card, AmountCents: v.TotalCents}, durable.WithRetry(paymentRetry)).Get(ctx)
	if err == nil && !pay.Approved {
		err = errors.New(pay.Reason)
	}
	if err != nil {
		return Receipt{}, compensate(ctx, o, held, err)
	}
	kv.Set(KVState, "paid")

	ctx.SetCustomStatus(StatusShipping)
	log.Info(fmt.Sprintf("paid (%s); starting ShipOrder", pay.AuthCode))
	ship, err := ShipOrder.CallSub(ctx, ShipRequest{Order: o.ID, Customer: o.Customer, Items: len(o.Lines)},
		durable.WithInstanceID(ShipInstance(o.ID))).Get(ctx)
	if err != nil {
		kv.Set(KVState, "shipping-failed")
		return Receipt{}, fmt.Errorf("shipping failed: %w", err)
	}
	kv.Set(KVState, "shipped")

	// Race: the delivery confirmation against a timeout.
	ctx.SetCustomStatus(StatusAwaitingDelivery)
	log.Info(fmt.Sprintf("shipped with %s (%s); waiting up to %v for %s", ship.Carrier, ship.Tracking, deliveryTimeout, EventDelivery))
	confirmed := durable.WaitForEvent[Delivery](ctx, EventDelivery)
	timeout := ctx.CreateTimer(deliveryTimeout)
	r := Receipt{Order: o.ID, TotalCents: v.TotalCents, AuthCode: pay.AuthCode, Tracking: ship.Tracking}
	if durable.Race(ctx, confirmed, timeout) == 0 {
		d, err := confirmed.Get(ctx)
		if err != nil {
			return Receipt{}, err
		}
		r.Delivery = "signed by " + d.SignedBy
		kv.Set(KVState, "delivered")
		ctx.SetCustomStatus(StatusDelivered)
		log.Info("delivery confirmed, " + r.Delivery)
	} else {
		r.Delivery = "unconfirmed"
		kv.Set(KVState, "delivery-unconfirmed")
		log.Warn(fmt.Sprintf("no delivery confirmation within %v", deliveryTimeout))
	}
	return r, nil
}

// compensate gives back every reservation of a declined order and
// returns the error that fails it.
func compensate(ctx *durable.OrchestrationContext, o Order, held []Reservation, declined error) error {
	kv := ctx.KV()
	ctx.SetCustomStatus(StatusCompensating)
	ctx.Logger().Warn(fmt.Sprintf("payment declined (%v); releasing %d reservations", declined, len(held)))
	releasing := make([]durable.Future[Release], len(held))
	for i, h := range held {
		releasing[i] = durable.CallActivity[Release](ctx, ActRelease, ItemRequest{Order: o.ID, SKU: h.SKU})
	}
	if _, err := durable.AwaitAll(ctx, releasing...); err != nil {
		kv.Set(KVState, "compensation-failed")
		return fmt.Errorf("payment declined: %v; releasing reservations failed: %w", declined, err)
	}
	kv.Set(KVState, "compensated")
	ctx.Logger().Warn("reservations released; order failed")
	return fmt.Errorf("payment declined: %w", declined)
}

func shipOrderFn(ctx *durable.OrchestrationContext, in ShipRequest) (Shipment, error) {
	log := ctx.Logger()
	label, err := durable.CallActivity[Label](ctx, ActLabel, in).Get(ctx)
	if err != nil {
		return Shipment{}, err
	}
	ctx.SetCustomStatus(StatusAwaitingPickup)
	log.Info(fmt.Sprintf("label %s printed; carrier pickup in %v (durable timer)", label.Tracking, pickupDelay))
	if err := ctx.Sleep(pickupDelay); err != nil {
		return Shipment{}, err
	}
	if _, err := durable.CallActivity[Notice](ctx, ActNotify, in).Get(ctx); err != nil {
		return Shipment{}, err
	}
	ctx.SetCustomStatus("picked-up")
	log.Info("picked up by " + label.Carrier)
	return Shipment{Tracking: label.Tracking, Carrier: label.Carrier}, nil
}

// Shop is the outside world the activities talk to: a warehouse and a
// payment gateway, shared by every runtime of a process (the demo's two
// nodes) as a real service would be.
type Shop struct {
	mu      sync.Mutex
	charges map[string]int // order → ChargePayment calls
	work    time.Duration  // how long one activity "works"
}

// NewShop returns a shop whose activities each take 80 to 160 ms.
func NewShop() *Shop { return &Shop{charges: map[string]int{}, work: 80 * time.Millisecond} }

// Activities returns the activity definitions a runtime registers beside
// ProcessOrder and ShipOrder; each result records node, the runtime that
// produced it.
func (s *Shop) Activities(node string) []durable.Definition {
	return []durable.Definition{
		durable.NewActivity(ActValidate, func(ctx context.Context, o Order) (Validation, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Validation{}, err
			}
			if len(o.Lines) == 0 {
				return Validation{}, errors.New("order has no lines")
			}
			total := 0
			for _, l := range o.Lines {
				if l.Qty <= 0 {
					return Validation{}, fmt.Errorf("line %s: quantity %d", l.SKU, l.Qty)
				}
				total += l.Qty * l.PriceCents
			}
			return Validation{TotalCents: total, Node: node}, nil
		}),
		durable.NewActivity(ActReserve, func(ctx context.Context, in ItemRequest) (Reservation, error) {
			if err := s.busy(ctx, 2); err != nil {
				return Reservation{}, err
			}
			durable.ActivityLogger(ctx).Info(fmt.Sprintf("%s: reserved %d × %s", ActReserve, in.Qty, in.SKU))
			return Reservation{SKU: in.SKU, Hold: "hold-" + in.Order + "-" + strings.ToLower(in.SKU), Node: node}, nil
		}),
		durable.NewActivity(ActRelease, func(ctx context.Context, in ItemRequest) (Release, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Release{}, err
			}
			hold := "hold-" + in.Order + "-" + strings.ToLower(in.SKU)
			durable.ActivityLogger(ctx).Info(fmt.Sprintf("%s: released %s", ActRelease, hold))
			return Release{Hold: hold, Node: node}, nil
		}),
		durable.NewActivity(ActCharge, func(ctx context.Context, in ChargeRequest) (Payment, error) {
			if err := s.busy(ctx, 2); err != nil {
				return Payment{}, err
			}
			s.mu.Lock()
			s.charges[in.Order]++
			call := s.charges[in.Order]
			s.mu.Unlock()
			log := durable.ActivityLogger(ctx)
			if call == 1 {
				log.Warn(fmt.Sprintf("%s: gateway timed out charging %s", ActCharge, Money(in.AmountCents)))
				return Payment{}, errors.New("payment gateway timeout (transient)")
			}
			if in.Card == DeclinedCard {
				log.Info(fmt.Sprintf("%s: card %s declined", ActCharge, MaskCard(in.Card)))
				return Payment{Approved: false, Reason: "card declined: insufficient funds", Node: node}, nil
			}
			log.Info(fmt.Sprintf("%s: charged %s to %s", ActCharge, Money(in.AmountCents), MaskCard(in.Card)))
			return Payment{Approved: true, AuthCode: "AUTH-" + strings.ToUpper(in.Order), Node: node}, nil
		}),
		durable.NewActivity(ActLabel, func(ctx context.Context, in ShipRequest) (Label, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Label{}, err
			}
			return Label{Tracking: "1Z" + strings.ToUpper(strings.ReplaceAll(in.Order, "-", "")) + "US", Carrier: "UPS", Node: node}, nil
		}),
		durable.NewActivity(ActNotify, func(ctx context.Context, in ShipRequest) (Notice, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Notice{}, err
			}
			durable.ActivityLogger(ctx).Info(fmt.Sprintf("%s: e-mailed %s", ActNotify, in.Customer))
			return Notice{Sent: "email", Node: node}, nil
		}),
	}
}

// busy stands for the work of an activity: units of s.work, or less when
// ctx ends (the runtime shuts down or cancels the activity). It then
// returns ctx.Err(), context.Canceled, which tells a runtime that is
// shutting down that the activity did not finish: the runtime hands it
// back, and another node runs it.
func (s *Shop) busy(ctx context.Context, units int) error {
	t := time.NewTimer(time.Duration(units) * s.work)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		durable.ActivityLogger(ctx).Info("interrupted: " + context.Cause(ctx).Error())
		return ctx.Err()
	}
}

// Money formats cents as dollars: "$129.00".
func Money(cents int) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

// MaskCard hides all but the last four digits of a card number.
func MaskCard(card string) string {
	if len(card) < 4 {
		return card
	}
	return "****" + card[len(card)-4:]
}
