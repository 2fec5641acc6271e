package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/duradyn/duradyn/durable"
	"github.com/duradyn/duradyn/dynamo"
	"github.com/duradyn/duradyn/dynamo/dynamotest"
	"github.com/duradyn/duradyn/localstack"
	"github.com/duradyn/duradyn/provider"
	"github.com/duradyn/duradyn/tables"
)

const (
	// runTimeout bounds the demo after the emulators are up: a guard
	// against a hang, far above the 15 to 25 s it takes.
	runTimeout = 2 * time.Minute
	// shutdownTimeout bounds each node's graceful shutdown.
	shutdownTimeout = 15 * time.Second

	nodeA = "node-a"
	nodeB = "node-b"
	// who the driver's lines and requests are attributed to.
	clientName = "client"

	// cancelOrder is cancelled by the client while its ShipOrder runs.
	cancelOrder  = "order-3"
	cancelReason = "customer changed their mind"

	// demoShards is the ready index's shard count, the same for every
	// provider on the table.
	demoShards = 4
)

// demoOrders are the three orders: order-1 goes through, order-2's card is
// declined, order-3 is cancelled during shipping.
func demoOrders() []Order {
	lines := func(n int) []Line {
		all := []Line{
			{SKU: "KB-87", Qty: 1, PriceCents: 12900},
			{SKU: "MOUSE-3", Qty: 1, PriceCents: 4900},
			{SKU: "USB-C-2M", Qty: 3, PriceCents: 1299},
			{SKU: "DESK-MAT", Qty: 1, PriceCents: 2500},
			{SKU: "STAND-AL", Qty: 2, PriceCents: 3450},
		}
		return all[:n]
	}
	return []Order{
		{ID: "order-1", Customer: "Ada Lovelace", Card: "4242-4242-4242-4242", Lines: lines(5)},
		{ID: "order-2", Customer: "Alan Turing", Card: declinedCard, Lines: lines(5)},
		{ID: cancelOrder, Customer: "Grace Hopper", Card: "5555-5555-5555-4444", Lines: lines(5)},
	}
}

// node is one runtime with its own provider, standing for one process.
type node struct {
	name  string
	p     *dynamo.Provider
	rt    *durable.Runtime
	meter *dynamotest.Meter
}

// result is what a run did, for the report and the test.
type result struct {
	orders []orderResult
	// history is the first order's history.
	history []provider.Event
	// usage is the DynamoDB usage of each node and of the client.
	usage map[string]dynamotest.Usage
	// activities counts the activities scheduled by all instances.
	activities int
	elapsed    time.Duration
}

// orderResult is one order's outcome.
type orderResult struct {
	order   Order
	status  *durable.Status
	child   *durable.Status // its ShipOrder; nil if it never started one
	kv      map[string]string
	events  int
	elapsed time.Duration
	nodes   []string
}

// run runs the demo on the DynamoDB and SQS endpoints ep: it creates a
// table and two queues, runs two nodes on them, drives three orders to
// their ends, prints the report to con and removes what it created.
func run(ctx context.Context, con *console, ep localstack.Endpoints) (res *result, err error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	began := time.Now()

	dm := &demo{con: con, ep: ep}
	defer func() { err = dm.tearDown(ctx, err) }()
	if err := dm.setUp(ctx); err != nil {
		return nil, err
	}
	if err := dm.startNodes(ctx); err != nil {
		return nil, err
	}
	if err := dm.openClient(); err != nil {
		return nil, err
	}
	results, err := dm.drive(ctx, cancel)
	if err != nil {
		return nil, err
	}
	return dm.reportResults(ctx, results, began)
}

// demo is one run of the demo: the AWS configuration its clients share and
// what it created, which tearDown removes. Each phase records what it
// created as it goes, so that tearDown removes it also when a later step
// of the phase failed.
type demo struct {
	con *console
	ep  localstack.Endpoints

	// transport is the one HTTP transport of every client, closed last,
	// so that no connection (and no goroutine) outlives the run.
	transport *http.Transport
	cfg       aws.Config
	db        *dynamodb.Client
	sq        *sqs.Client

	table        string
	tableCreated bool
	// orchQueue and workQueue are the wake-up queues' URLs; queues lists
	// those created, in the order they were.
	orchQueue, workQueue string
	queues               []string

	// nodes are node-a and node-b, as far as they were created.
	nodes []*node
	// clientProvider is the client's provider, metered by clientMeter;
	// nil until it is open.
	clientProvider *dynamo.Provider
	clientMeter    *dynamotest.Meter
	client         *durable.Client
}

// setUp is the first phase: it prepares the AWS configuration on the
// run's own HTTP transport, then creates the table and its two wake-up
// queues.
func (dm *demo) setUp(ctx context.Context) error {
	dm.transport = http.DefaultTransport.(*http.Transport).Clone()
	dm.transport.MaxIdleConnsPerHost = 64
	cfg, err := dm.ep.AWSConfig(ctx)
	if err != nil {
		return err
	}
	cfg.HTTPClient = &http.Client{Transport: dm.transport}
	dm.cfg = cfg

	dm.db, dm.sq = dm.ep.DynamoDB(cfg), dm.ep.SQS(cfg)
	dm.table = "duradyn-demo-" + randomHex()
	dm.con.say("demo", "", "creating table %s and its two wake-up queues", dm.table)
	if err := tables.Create(ctx, dm.db, dm.table); err != nil {
		return err
	}
	dm.tableCreated = true
	if dm.orchQueue, err = dm.createQueue(ctx, "orchestrator"); err != nil {
		return err
	}
	dm.workQueue, err = dm.createQueue(ctx, "worker")
	return err
}

// createQueue creates the queue named after the table and suffix, records
// it for tearDown and returns its URL.
func (dm *demo) createQueue(ctx context.Context, suffix string) (string, error) {
	out, err := dm.sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(dm.table + "-" + suffix)})
	if err != nil {
		return "", fmt.Errorf("create queue %s-%s: %w", dm.table, suffix, err)
	}
	url := aws.ToString(out.QueueUrl)
	dm.queues = append(dm.queues, url)
	return url, nil
}

// deleteQueue deletes the queue at url, with a time of its own: ctx may
// have ended. A queue already gone is no error.
func (dm *demo) deleteQueue(ctx context.Context, url string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := dm.sq.DeleteQueue(cctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	var gone *sqstypes.QueueDoesNotExist
	if errors.As(err, &gone) {
		return nil
	}
	return err
}

// newProvider opens a provider on the run's table and queues for who,
// whose DynamoDB requests m meters. Each node and the client have their
// own.
func (dm *demo) newProvider(who string, m *dynamotest.Meter) (*dynamo.Provider, error) {
	return dynamo.New(dm.cfg, func(o *dynamo.Options) {
		o.TableName = dm.table
		o.OrchestratorQueueURL = dm.orchQueue
		o.WorkerQueueURL = dm.workQueue
		// A fetch sweeps every shard of the ready index (one Query
		// each) before it waits; four shards, not the default 16,
		// keep the emulator on a small machine responsive.
		o.Shards = demoShards
		o.Client = dm.ep.DynamoDB(dm.cfg, m.Attach)
		o.SQSClient = dm.ep.SQS(dm.cfg)
		o.Logger = dm.con.logger(who)
	})
}

// startNodes is the second phase: it creates node-a and node-b, whose
// activities share one shop, and then starts both.
func (dm *demo) startNodes(ctx context.Context) error {
	s := newShop()
	for _, name := range []string{nodeA, nodeB} {
		n, err := dm.newNode(name, s)
		if err != nil {
			return err
		}
		dm.nodes = append(dm.nodes, n)
	}
	for _, n := range dm.nodes {
		if err := n.rt.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// newNode creates the node name: a metered provider and a runtime, not
// started, with the orchestrations and s's activities.
func (dm *demo) newNode(name string, s *shop) (*node, error) {
	n := &node{name: name, meter: &dynamotest.Meter{}}
	p, err := dm.newProvider(name, n.meter)
	if err != nil {
		return nil, err
	}
	n.p = p
	reg, err := durable.NewRegistry(append(s.Activities(name), processOrder, shipOrder)...)
	if err == nil {
		n.rt, err = durable.NewRuntime(p, reg, func(o *durable.Options) {
			o.RuntimeID = name
			o.Logger = dm.con.logger(name)
			o.WorkerConcurrency = 4
			o.ShutdownTimeout = shutdownTimeout
			// Work a stopping node had just locked (a fetch whose lock
			// request was in flight when the shutdown cancelled it) is
			// taken over once its lease ends, by the next sweep of the
			// table: 3 s leases renewed every 2 s and a sweep at least
			// every 2 s keep that hand-over within about 5 s.
			o.OrchestratorLockTimeout = 3 * time.Second
			o.OrchestratorLockRenewalBuffer = time.Second
			o.WorkerLockTimeout = 3 * time.Second
			o.WorkerLockRenewalBuffer = time.Second
			o.LongPollTimeout = 2 * time.Second
		})
	}
	if err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return n, nil
}

// openClient opens the client's metered provider and the client on it.
func (dm *demo) openClient() error {
	dm.clientMeter = &dynamotest.Meter{}
	cp, err := dm.newProvider(clientName, dm.clientMeter)
	if err != nil {
		return err
	}
	dm.clientProvider = cp
	// The client polls every 20 ms at first, backing off to 200 ms.
	dm.client = durable.NewClient(cp, func(o *durable.ClientOptions) {
		o.PollInitial = 20 * time.Millisecond
		o.PollMax = 200 * time.Millisecond
	})
	return nil
}

// drive is the workload: it starts the three orders and follows each to
// its end with a driver, which shuts node-a down half way, and returns
// their outcomes. If a start fails, it calls cancel, which ends the run's
// context, and waits for the orders already being watched.
func (dm *demo) drive(ctx context.Context, cancel context.CancelFunc) ([]orderResult, error) {
	d := &driver{con: dm.con, client: dm.client, stop: dm.nodes[0]}
	orders := demoOrders()
	results := make([]orderResult, len(orders))
	var wg sync.WaitGroup
	for i, o := range orders {
		results[i].order = o
		if err := processOrder.Start(ctx, d.client, o.ID, o); err != nil {
			cancel()
			wg.Wait()
			d.bg.Wait()
			return nil, err
		}
		dm.con.say(clientName, o.ID, "started ProcessOrder for %s (%d lines, card %s)", o.Customer, len(o.Lines), maskCard(o.Card))
		started := time.Now()
		wg.Go(func() {
			results[i].status, results[i].child = d.watch(ctx, o)
			results[i].elapsed = time.Since(started)
		})
		d.bg.Go(func() { d.confirmDelivery(ctx, o) })
	}
	wg.Wait()
	d.bg.Wait()
	if err := errors.Join(d.errs...); err != nil {
		return nil, err
	}
	return results, nil
}

// reportResults is the report: it takes the DynamoDB usage of each node
// and of the client, stops node-b, whose work is done, reads each order's
// history and KV values, prints the report and checks the result. began
// is when the run began.
func (dm *demo) reportResults(ctx context.Context, results []orderResult, began time.Time) (*result, error) {
	res := &result{orders: results, usage: map[string]dynamotest.Usage{}}
	for _, n := range dm.nodes {
		res.usage[n.name] = n.meter.Usage()
	}
	res.usage[clientName] = dm.clientMeter.Usage()
	// node-b's work is done: stop it before the report.
	sctx, scancel := context.WithTimeout(ctx, shutdownTimeout)
	err := dm.nodes[1].rt.Shutdown(sctx)
	scancel()
	if err != nil {
		return nil, err
	}

	for i := range res.orders {
		if err := dm.readOrder(ctx, res, i); err != nil {
			return nil, err
		}
	}
	res.elapsed = time.Since(began)
	dm.con.text(res.report())
	return res, res.check()
}

// readOrder fills in res.orders[i] from the store: its event count, its
// KV values and the nodes that ran it and its ShipOrder. It counts their
// activities in res.activities and, for the first order, keeps its
// history in res.history.
func (dm *demo) readOrder(ctx context.Context, res *result, i int) error {
	r := &res.orders[i]
	ids := []string{r.order.ID}
	if r.child != nil {
		ids = append(ids, shipInstance(r.order.ID))
	}
	for _, id := range ids {
		h, err := dm.client.History(ctx, id, 0)
		if err != nil {
			return err
		}
		if id == r.order.ID {
			r.events = len(h)
		}
		if i == 0 && id == r.order.ID {
			res.history = h
		}
		for _, e := range h {
			if _, ok := e.Kind.(provider.ActivityScheduled); ok {
				res.activities++
			}
		}
	}
	var err error
	if r.kv, err = dm.client.KVValues(ctx, r.order.ID); err != nil {
		return err
	}
	r.nodes = dm.con.nodesOf(ids...)
	return nil
}

// tearDown is the last phase: it removes what the run created, newest
// first (the client's provider, the nodes in the order they were created,
// the queues, the table), each with a time of its own since ctx may have
// ended, then closes the transport's idle connections. It returns err
// joined with the errors of the removals.
func (dm *demo) tearDown(ctx context.Context, err error) error {
	if dm.clientProvider != nil {
		err = errors.Join(err, dm.clientProvider.Close())
	}
	for _, n := range dm.nodes {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		err = errors.Join(err, n.rt.Shutdown(sctx), n.p.Close())
		cancel()
	}
	for i := len(dm.queues) - 1; i >= 0; i-- {
		err = errors.Join(err, dm.deleteQueue(ctx, dm.queues[i]))
	}
	if dm.tableCreated {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err = errors.Join(err, tables.Delete(cctx, dm.db, dm.table))
		cancel()
	}
	if dm.transport != nil {
		dm.transport.CloseIdleConnections()
	}
	return err
}

// driver is the client side: it starts the orders, watches their custom
// status and acts on it.
type driver struct {
	con    *console
	client *durable.Client
	stop   *node // shut down half way

	stopOnce sync.Once
	bg       sync.WaitGroup
	mu       sync.Mutex
	errs     []error
}

func (d *driver) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errs = append(d.errs, err)
}

// watch follows one order to its end, reacting to its custom status: the
// first "shipping" → shut node-a down; cancelOrder "shipping" → cancel it
// once its ShipOrder waits for pickup. It returns the order's final status
// and its ShipOrder's, if it started one.
func (d *driver) watch(ctx context.Context, o Order) (*durable.Status, *durable.Status) {
	var seen uint64
	var cancelled bool
	for {
		st, err := d.client.WaitForStatusChange(ctx, o.ID, seen)
		if err != nil {
			d.fail(fmt.Errorf("%s: %w", o.ID, err))
			return nil, nil
		}
		if st.CustomStatusVersion != seen && st.CustomStatus != nil {
			seen = st.CustomStatusVersion
			status := *st.CustomStatus
			d.con.say(clientName, o.ID, "status: %s", status)
			switch {
			case status == statusShipping:
				// Half way: the first order to ship stops node-a.
				d.stopOnce.Do(func() { d.bg.Go(func() { d.shutdown(ctx) }) })
				if o.ID == cancelOrder && !cancelled {
					cancelled = true
					if err := d.cancelDuringShipping(ctx, o.ID); err != nil {
						d.fail(err)
					}
				}
			}
		}
		if st.State.IsTerminal() {
			d.report(o.ID, st)
			child, err := d.child(ctx, o.ID)
			if err != nil {
				d.fail(err)
			}
			return st, child
		}
	}
}

// confirmDelivery is the courier: once the order waits for its delivery
// confirmation (its history records the wait, so the event cannot arrive
// before it and be dropped), it raises DeliveryConfirmed. An order that
// ends before (declined, cancelled) gets none.
func (d *driver) confirmDelivery(ctx context.Context, o Order) {
	err := d.client.WaitForSubscription(ctx, o.ID, eventDelivery)
	switch {
	case errors.Is(err, durable.ErrInstanceEnded) || ctx.Err() != nil:
		return
	case err != nil:
		d.fail(fmt.Errorf("%s: wait for the %s wait: %w", o.ID, eventDelivery, err))
		return
	}
	d.con.say(clientName, o.ID, "courier reports delivery; raising %s", eventDelivery)
	if err := d.client.RaiseEvent(ctx, o.ID, eventDelivery, Delivery{SignedBy: o.Customer}); err != nil {
		d.fail(fmt.Errorf("%s: raise %s: %w", o.ID, eventDelivery, err))
	}
}

// cancelDuringShipping waits until the order's ShipOrder waits for the
// carrier, then cancels the order.
func (d *driver) cancelDuringShipping(ctx context.Context, order string) error {
	child := shipInstance(order)
	var seen uint64
	for {
		st, err := d.client.WaitForStatusChange(ctx, child, seen)
		if err != nil {
			return fmt.Errorf("%s: %w", child, err)
		}
		seen = st.CustomStatusVersion
		if st.State.IsTerminal() || (st.CustomStatus != nil && *st.CustomStatus == statusAwaitingPickup) {
			break
		}
	}
	d.con.say(clientName, order, "customer cancels the order while %s waits for pickup", child)
	return d.client.CancelInstance(ctx, order, cancelReason)
}

// child waits for the order's ShipOrder to end; nil if there is none.
func (d *driver) child(ctx context.Context, order string) (*durable.Status, error) {
	id := shipInstance(order)
	st, err := d.client.Status(ctx, id)
	if err != nil || st.State == durable.StateNotFound {
		return nil, err
	}
	if !st.State.IsTerminal() {
		if st, err = d.client.WaitForCompletion(ctx, id); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
	}
	d.report(id, st)
	return st, nil
}

func (d *driver) report(id string, st *durable.Status) {
	switch st.State {
	case durable.StateCompleted:
		d.con.say(clientName, id, "Completed: %s", st.Output)
	default:
		d.con.say(clientName, id, "%s: %s", st.State, st.Failure.DisplayMessage())
	}
}

// shutdown stops node-a gracefully: its turns in flight commit, its
// running activities are handed back, and node-b takes over.
func (d *driver) shutdown(ctx context.Context) {
	d.con.say("demo", "", "half way: %s shuts down gracefully; %s finishes the work", d.stop.name, nodeB)
	start := time.Now()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := d.stop.rt.Shutdown(sctx); err != nil {
		d.fail(fmt.Errorf("%s: shutdown: %w", d.stop.name, err))
		return
	}
	d.con.say("demo", "", "%s stopped after %v", d.stop.name, time.Since(start).Round(time.Millisecond))
}

func randomHex() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
