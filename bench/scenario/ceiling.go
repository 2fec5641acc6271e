package scenario

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/bench/report"
	"github.com/duradyn/duradyn/tables"
)

// EndpointCeilingName is the name of the EndpointCeiling scenario.
const EndpointCeilingName = "EndpointCeiling"

// ceilingClients is how many clients EndpointCeiling runs at once: more
// than the runtime's default slots (two orchestration and two worker), so
// the endpoint, not the clients, is the limit.
const ceilingClients = 8

// ExtraRequestsPerStep is EndpointCeiling's Extra figure of DynamoDB
// requests a step. The result has no DynamoDB counts, so that the table
// shows no request units: nothing meters the steps.
const ExtraRequestsPerStep = "DynamoDB requests/step"

// ceilingSystem names EndpointCeiling's row.
const ceilingSystem = "dynamodb endpoint alone"

// EndpointCeiling measures what the DynamoDB endpoint (DynamoDB Local
// unless the environment names another) serves when it does nothing but a
// chain's steps, each reduced to the four requests a step of a chain makes
// at steady state (docs/design.md §5): the control rows' consistent Query,
// the lock's conditional PutItem, the turn's four-item transaction (lock
// released, history row put, message row deleted, activity row put already
// claimed for the waiting worker, §8 handed activities) and the worker's
// two-item transaction (activity row deleted, completion message put). Items have duradyn's keys on a
// duradyn table, queue rows its ready index's keys (so their writes keep
// the index), and no payload; each of ceilingClients clients has an
// instance of its own, so no condition fails. There is no runtime, no
// meter and no wake-up queue.
//
// Its steps a second bound what any system of this benchmark can do on the
// same endpoint and machine: a runtime's requests carry more (payloads,
// more attributes and conditions), HelloCities5 makes about five requests
// an activity rather than four, and the runtime shares the machine's CPUs
// with the endpoint.
func EndpointCeiling(ctx context.Context, env *Env, d time.Duration) ([]report.Result, error) {
	r := report.Result{Scenario: EndpointCeilingName, System: ceilingSystem,
		Notes: fmt.Sprintf("%d clients for %v, each a chain of steps of 4 minimal requests (Query, PutItem, TransactWriteItems of 4 putting the activity claimed, TransactWriteItems of 2) on an instance of its own; no runtime, meter or queue: the most a 4-request step can do on this endpoint and machine", ceilingClients, d)}
	err := func() (err error) {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.MaxIdleConnsPerHost = 2 * ceilingClients
		defer transport.CloseIdleConnections()
		cfg, err := env.Endpoints.AWSConfig(ctx)
		if err != nil {
			return err
		}
		cfg.HTTPClient = &http.Client{Transport: transport}
		db := env.Endpoints.DynamoDB(cfg)
		table := "bench-ceiling-" + randomHex()
		if err := tables.Create(ctx, db, table); err != nil {
			return fmt.Errorf("create table %s: %w", table, err)
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := tables.Delete(dctx, db, table); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
		return runSteps(ctx, db, table, d, &r)
	}()
	if err != nil {
		r.Notes = "FAILED: " + err.Error() + "; " + r.Notes
		return []report.Result{r}, fmt.Errorf("%w: %s: %w", ErrScenario, EndpointCeilingName, err)
	}
	env.logf("%s: %d steps in %v", EndpointCeilingName, r.Activities, r.Elapsed.Round(time.Millisecond))
	return []report.Result{r}, nil
}

// runSteps runs ceilingClients chains for d and records their steps in r.
func runSteps(ctx context.Context, db *dynamodb.Client, table string, d time.Duration, r *report.Result) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	began := time.Now()
	deadline := began.Add(d)
	for i := range ceilingClients {
		wg.Go(func() {
			c := &stepClient{db: db, table: table, instance: fmt.Sprintf("ceiling-%d", i)}
			var latencies []time.Duration
			err := c.seed(ctx)
			// At least one step each, however long seeding took.
			for err == nil {
				t := time.Now()
				if err = c.step(ctx); err == nil {
					latencies = append(latencies, time.Since(t))
				}
				if !time.Now().Before(deadline) {
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			r.Latencies = append(r.Latencies, latencies...)
			errs = append(errs, err)
		})
	}
	wg.Wait()
	r.Elapsed = time.Since(began)
	r.Activities = len(r.Latencies)
	setExtra(r, ExtraRequestsPerStep, float64(len(stepRequests)))
	return errors.Join(errs...)
}

// stepClient makes one instance's requests. seq numbers its queue rows,
// ver is its lock row's version.
type stepClient struct {
	db       *dynamodb.Client
	table    string
	instance string
	seq      int
	ver      int
}

func strValue(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func numValue(v int) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(v)}
}

func (c *stepClient) pk() types.AttributeValue { return strValue("I#" + c.instance) }

func (c *stepClient) key(sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tables.AttrPK: c.pk(), tables.AttrSK: strValue(sk)}
}

// row is an item of the instance's partition; a queue row also has the
// ready index's keys.
func (c *stepClient) row(sk string, queued bool) map[string]types.AttributeValue {
	it := c.key(sk)
	it["data"] = strValue(strings.Repeat("x", 100))
	if queued {
		it[tables.AttrReadyPK] = strValue("W#3")
		it[tables.AttrReadySK] = strValue(fmt.Sprintf("%013d#%s#%d", time.Now().UnixMilli(), c.instance, c.seq))
	}
	return it
}

func (c *stepClient) messageSK() string  { return fmt.Sprintf("#Q#%08d", c.seq) }
func (c *stepClient) activitySK() string { return fmt.Sprintf("#A#%08d", c.seq) }

func (c *stepClient) lockRow() map[string]types.AttributeValue {
	it := c.key("#LOCK")
	it["ver"] = numValue(c.ver)
	it[tables.AttrLockUntil] = numValue(int(time.Now().UnixMilli()))
	return it
}

// versionCondition conditions a write of the lock row on the version it
// holds, and moves the version on.
func (c *stepClient) versionCondition() (*string, map[string]string, map[string]types.AttributeValue) {
	old := c.ver
	c.ver++
	return aws.String("#ver = :old"), map[string]string{"#ver": "ver"}, map[string]types.AttributeValue{":old": numValue(old)}
}

// seed writes the lock row and the first message row.
func (c *stepClient) seed(ctx context.Context) error {
	for _, it := range []map[string]types.AttributeValue{c.lockRow(), c.row(c.messageSK(), true)} {
		if _, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &c.table, Item: it}); err != nil {
			return err
		}
	}
	return nil
}

// stepRequests are a chained step's requests, in order.
var stepRequests = []func(c *stepClient, ctx context.Context) error{
	(*stepClient).readControlRows, (*stepClient).lock, (*stepClient).commitTurn, (*stepClient).ackActivity,
}

// step makes a chained step's requests.
func (c *stepClient) step(ctx context.Context) error {
	for _, request := range stepRequests {
		if err := request(c, ctx); err != nil {
			return err
		}
	}
	return nil
}

func (c *stepClient) readControlRows(ctx context.Context) error {
	_, err := c.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &c.table,
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk < :history"),
		ExpressionAttributeNames:  map[string]string{"#pk": tables.AttrPK, "#sk": tables.AttrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": c.pk(), ":history": strValue("#M")},
	})
	return err
}

func (c *stepClient) lock(ctx context.Context) error {
	cond, names, values := c.versionCondition()
	_, err := c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &c.table, Item: c.lockRow(),
		ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values})
	return err
}

// commitTurn releases the lock, puts a history row, deletes the message
// row and puts the next activity row, claimed: its ready key at the end of
// a lease, as a turn writes the activity it hands to a waiting fetch.
func (c *stepClient) commitTurn(ctx context.Context) error {
	cond, names, values := c.versionCondition()
	consumed := c.messageSK()
	c.seq++
	activity := c.row(c.activitySK(), true)
	activity[tables.AttrReadySK] = strValue(fmt.Sprintf("%013d#%s#%d", time.Now().Add(30*time.Second).UnixMilli(), c.instance, c.seq))
	activity[tables.AttrLockUntil] = numValue(1)
	_, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &c.table, Item: c.lockRow(), ConditionExpression: cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values}},
		{Put: &types.Put{TableName: &c.table, Item: c.row(fmt.Sprintf("#X#1#%08d", c.seq), false),
			ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": tables.AttrPK}}},
		{Delete: &types.Delete{TableName: &c.table, Key: c.key(consumed)}},
		{Put: &types.Put{TableName: &c.table, Item: activity}},
	}})
	return err
}

// ackActivity deletes the activity row and puts the completion message,
// which the next step's turn deletes.
func (c *stepClient) ackActivity(ctx context.Context) error {
	_, err := c.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: &c.table, Key: c.key(c.activitySK())}},
		{Put: &types.Put{TableName: &c.table, Item: c.row(c.messageSK(), true),
			ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": tables.AttrPK}}},
	}})
	return err
}
