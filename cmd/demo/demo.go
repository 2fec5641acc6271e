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

	// One transport for every client, closed last, so that no connection
	// (and no goroutine) outlives the run.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	defer transport.CloseIdleConnections()
	cfg, err := ep.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient = &http.Client{Transport: transport}

	// The table and queues.
	db, sq := ep.DynamoDB(cfg), ep.SQS(cfg)
	table := "duradyn-demo-" + randomHex()
	con.say("demo", "", "creating table %s and its two wake-up queues", table)
	if err := tables.Create(ctx, db, table); err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, tables.Delete(cctx, db, table))
	}()
	queueURL := func(suffix string) (string, error) {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(table + "-" + suffix)})
		if err != nil {
			return "", fmt.Errorf("create queue %s-%s: %w", table, suffix, err)
		}
		return aws.ToString(out.QueueUrl), nil
	}
	deleteQueue := func(url string) error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, err := sq.DeleteQueue(cctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		var gone *sqstypes.QueueDoesNotExist
		if errors.As(err, &gone) {
			return nil
		}
		return err
	}
	orchQueue, err := queueURL("orchestrator")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, deleteQueue(orchQueue)) }()
	workQueue, err := queueURL("worker")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, deleteQueue(workQueue)) }()

	// One provider per node and one for the client, each metered.
	newProvider := func(who string, m *dynamotest.Meter) (*dynamo.Provider, error) {
		return dynamo.New(cfg, func(o *dynamo.Options) {
			o.TableName = table
			o.OrchestratorQueueURL = orchQueue
			o.WorkerQueueURL = workQueue
			// A fetch sweeps every shard of the ready index (one Query
			// each) before it waits; four shards, not the default 16,
			// keep the emulator on a small machine responsive.
			o.Shards = demoShards
			o.Client = ep.DynamoDB(cfg, m.Attach)
			o.SQSClient = ep.SQS(cfg)
			o.Logger = con.logger(who)
		})
	}
	s := newShop()
	newNode := func(name string) (*node, error) {
		n := &node{name: name, meter: &dynamotest.Meter{}}
		p, err := newProvider(name, n.meter)
		if err != nil {
			return nil, err
		}
		n.p = p
		reg, err := durable.NewRegistry(append(s.activities(name), processOrder, shipOrder)...)
		if err == nil {
			n.rt, err = durable.NewRuntime(p, reg, func(o *durable.Options) {
				o.RuntimeID = name
				o.Logger = con.logger(name)
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
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			err = errors.Join(err, n.rt.Shutdown(sctx), n.p.Close())
			cancel()
		}
	}()
	for _, name := range []string{nodeA, nodeB} {
		n, err := newNode(name)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		if err := n.rt.Start(ctx); err != nil {
			return nil, err
		}
	}
	clientMeter := &dynamotest.Meter{}
	cp, err := newProvider(clientName, clientMeter)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, cp.Close()) }()

	// The client polls every 20 ms at first, backing off to 200 ms.
	client := durable.NewClient(cp, func(o *durable.ClientOptions) {
		o.PollInitial = 20 * time.Millisecond
		o.PollMax = 200 * time.Millisecond
	})
	d := &driver{con: con, client: client, stop: nodes[0]}
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
		con.say(clientName, o.ID, "started ProcessOrder for %s (%d lines, card %s)", o.Customer, len(o.Lines), maskCard(o.Card))
		started := time.Now()
		wg.Go(func() {
			results[i].status, results[i].child = d.watch(ctx, o)
			results[i].elapsed = time.Since(started)
		})
	}
	wg.Wait()
	d.bg.Wait()
	if err := errors.Join(d.errs...); err != nil {
		return nil, err
	}

	res = &result{orders: results, usage: map[string]dynamotest.Usage{}}
	for _, n := range nodes {
		res.usage[n.name] = n.meter.Usage()
	}
	res.usage[clientName] = clientMeter.Usage()
	// node-b's work is done: stop it before the report.
	sctx, scancel := context.WithTimeout(ctx, shutdownTimeout)
	err = nodes[1].rt.Shutdown(sctx)
	scancel()
	if err != nil {
		return nil, err
	}

	for i := range res.orders {
		r := &res.orders[i]
		ids := []string{r.order.ID}
		if r.child != nil {
			ids = append(ids, shipInstance(r.order.ID))
		}
		for _, id := range ids {
			h, err := d.client.History(ctx, id, 0)
			if err != nil {
				return nil, err
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
		if r.kv, err = d.client.KVValues(ctx, r.order.ID); err != nil {
			return nil, err
		}
		r.nodes = con.nodesOf(ids...)
	}
	res.elapsed = time.Since(began)
	con.text(res.report())
	return res, res.check()
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

// watch follows one order to its end, reacting to its custom status:
// "awaiting-delivery" → raise DeliveryConfirmed; the first "shipping" →
// shut node-a down; cancelOrder "shipping" → cancel it once its ShipOrder
// waits for pickup. It returns the order's final status and its
// ShipOrder's, if it started one.
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
			case status == statusAwaitingDelivery:
				d.con.say(clientName, o.ID, "courier reports delivery; raising %s", eventDelivery)
				if err := d.client.RaiseEvent(ctx, o.ID, eventDelivery, Delivery{SignedBy: o.Customer}); err != nil {
					d.fail(fmt.Errorf("%s: raise %s: %w", o.ID, eventDelivery, err))
				}
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
