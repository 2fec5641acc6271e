package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/duradyn/duradyn/durable"
)

// The workflow: names, timings and the state the orders report.
const (
	actValidate = "ValidateOrder"
	actReserve  = "ReserveItem"
	actRelease  = "ReleaseItem"
	actCharge   = "ChargePayment"
	actLabel    = "CreateLabel"
	actNotify   = "NotifyCustomer"

	// eventDelivery is the external event the driver raises when an order
	// reports statusAwaitingDelivery.
	eventDelivery = "DeliveryConfirmed"

	// Custom statuses (what an order is doing now).
	statusValidating       = "validating"
	statusReserving        = "reserving"
	statusCharging         = "charging"
	statusCompensating     = "compensating"
	statusShipping         = "shipping"
	statusAwaitingDelivery = "awaiting-delivery"
	statusDelivered        = "delivered"
	statusAwaitingPickup   = "awaiting-pickup" // ShipOrder's

	// kvState is the KV key holding what an order has achieved so far.
	kvState = "order_state"

	// pickupDelay is ShipOrder's durable timer; deliveryTimeout the timer
	// that races the delivery confirmation. The client cancels order-3
	// while its ShipOrder waits for pickup, just after node-a has stopped:
	// a wake-up the receive node-a left in flight takes goes back to the
	// queue half a second later (package queues), and one it took as its
	// provider closed comes back after the receive's 2 s visibility
	// timeout, so the pickup waits longer than that for the cancellation
	// to reach it.
	pickupDelay     = 4 * time.Second
	deliveryTimeout = 20 * time.Second

	// declinedCard is the card the payment gateway declines.
	declinedCard = "4000-0000-0000-0002"
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

// processOrder is the order workflow; shipOrder its sub-orchestration.
var (
	processOrder = durable.NewOrchestration("ProcessOrder", processOrderFn, durable.Version("1.0.0"))
	shipOrder    = durable.NewOrchestration("ShipOrder", shipOrderFn, durable.Version("1.0.0"))
)

// shipInstance is the instance id of an order's ShipOrder.
func shipInstance(order string) string { return order + "-ship" }

func processOrderFn(ctx *durable.OrchestrationContext, o Order) (Receipt, error) {
	log := ctx.Logger()
	kv := ctx.KV()

	ctx.SetCustomStatus(statusValidating)
	log.Info(fmt.Sprintf("order received: %d lines for %s", len(o.Lines), o.Customer))
	v, err := durable.CallActivity[Validation](ctx, actValidate, o).Get(ctx)
	if err != nil {
		kv.Set(kvState, "rejected")
		return Receipt{}, fmt.Errorf("invalid order: %w", err)
	}
	kv.Set(kvState, "validated")

	// Fan-out / fan-in: one reservation per line, all at once.
	ctx.SetCustomStatus(statusReserving)
	log.Info(fmt.Sprintf("order valid (%s); reserving %d items in parallel", money(v.TotalCents), len(o.Lines)))
	reserving := make([]durable.Future[Reservation], len(o.Lines))
	for i, l := range o.Lines {
		reserving[i] = durable.CallActivity[Reservation](ctx, actReserve, ItemRequest{Order: o.ID, SKU: l.SKU, Qty: l.Qty})
	}
	held, err := durable.AwaitAll(ctx, reserving...)
	if err != nil {
		kv.Set(kvState, "out-of-stock")
		return Receipt{}, fmt.Errorf("reservation failed: %w", err)
	}
	kv.Set(kvState, "reserved")

	ctx.SetCustomStatus(statusCharging)
	log.Info(fmt.Sprintf("%d items reserved; charging %s", len(held), money(v.TotalCents)))
	pay, err := durable.CallActivity[Payment](ctx, actCharge,
		ChargeRequest{Order: o.ID, Card: o.Card, AmountCents: v.TotalCents}, durable.WithRetry(paymentRetry)).Get(ctx)
	if err == nil && !pay.Approved {
		err = errors.New(pay.Reason)
	}
	if err != nil {
		// Compensation: give back every reservation, then fail.
		ctx.SetCustomStatus(statusCompensating)
		log.Warn(fmt.Sprintf("payment declined (%v); releasing %d reservations", err, len(held)))
		releasing := make([]durable.Future[Release], len(held))
		for i, h := range held {
			releasing[i] = durable.CallActivity[Release](ctx, actRelease, ItemRequest{Order: o.ID, SKU: h.SKU})
		}
		if _, rerr := durable.AwaitAll(ctx, releasing...); rerr != nil {
			kv.Set(kvState, "compensation-failed")
			return Receipt{}, fmt.Errorf("payment declined: %v; releasing reservations failed: %w", err, rerr)
		}
		kv.Set(kvState, "compensated")
		log.Warn("reservations released; order failed")
		return Receipt{}, fmt.Errorf("payment declined: %w", err)
	}
	kv.Set(kvState, "paid")

	ctx.SetCustomStatus(statusShipping)
	log.Info(fmt.Sprintf("paid (%s); starting ShipOrder", pay.AuthCode))
	ship, err := shipOrder.CallSub(ctx, ShipRequest{Order: o.ID, Customer: o.Customer, Items: len(o.Lines)},
		durable.WithInstanceID(shipInstance(o.ID))).Get(ctx)
	if err != nil {
		kv.Set(kvState, "shipping-failed")
		return Receipt{}, fmt.Errorf("shipping failed: %w", err)
	}
	kv.Set(kvState, "shipped")

	// Race: the delivery confirmation against a timeout.
	ctx.SetCustomStatus(statusAwaitingDelivery)
	log.Info(fmt.Sprintf("shipped with %s (%s); waiting up to %v for %s", ship.Carrier, ship.Tracking, deliveryTimeout, eventDelivery))
	confirmed := durable.WaitForEvent[Delivery](ctx, eventDelivery)
	timeout := ctx.CreateTimer(deliveryTimeout)
	r := Receipt{Order: o.ID, TotalCents: v.TotalCents, AuthCode: pay.AuthCode, Tracking: ship.Tracking}
	if durable.Race(ctx, confirmed, timeout) == 0 {
		d, err := confirmed.Get(ctx)
		if err != nil {
			return Receipt{}, err
		}
		r.Delivery = "signed by " + d.SignedBy
		kv.Set(kvState, "delivered")
		ctx.SetCustomStatus(statusDelivered)
		log.Info("delivery confirmed, " + r.Delivery)
	} else {
		r.Delivery = "unconfirmed"
		kv.Set(kvState, "delivery-unconfirmed")
		log.Warn(fmt.Sprintf("no delivery confirmation within %v", deliveryTimeout))
	}
	return r, nil
}

func shipOrderFn(ctx *durable.OrchestrationContext, in ShipRequest) (Shipment, error) {
	log := ctx.Logger()
	label, err := durable.CallActivity[Label](ctx, actLabel, in).Get(ctx)
	if err != nil {
		return Shipment{}, err
	}
	ctx.SetCustomStatus(statusAwaitingPickup)
	log.Info(fmt.Sprintf("label %s printed; carrier pickup in %v (durable timer)", label.Tracking, pickupDelay))
	if err := ctx.Sleep(pickupDelay); err != nil {
		return Shipment{}, err
	}
	if _, err := durable.CallActivity[Notice](ctx, actNotify, in).Get(ctx); err != nil {
		return Shipment{}, err
	}
	ctx.SetCustomStatus("picked-up")
	log.Info("picked up by " + label.Carrier)
	return Shipment{Tracking: label.Tracking, Carrier: label.Carrier}, nil
}

// shop is the outside world the activities talk to: a warehouse and a
// payment gateway, shared by both nodes as a real service would be.
type shop struct {
	mu      sync.Mutex
	charges map[string]int // order → ChargePayment calls
	work    time.Duration  // how long one activity "works"
}

func newShop() *shop { return &shop{charges: map[string]int{}, work: 80 * time.Millisecond} }

// activities returns the activity definitions a node registers; each
// result records the node that produced it.
func (s *shop) activities(node string) []durable.Definition {
	return []durable.Definition{
		durable.NewActivity(actValidate, func(ctx context.Context, o Order) (Validation, error) {
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
		durable.NewActivity(actReserve, func(ctx context.Context, in ItemRequest) (Reservation, error) {
			if err := s.busy(ctx, 2); err != nil {
				return Reservation{}, err
			}
			durable.ActivityLogger(ctx).Info(fmt.Sprintf("%s: reserved %d × %s", actReserve, in.Qty, in.SKU))
			return Reservation{SKU: in.SKU, Hold: "hold-" + in.Order + "-" + strings.ToLower(in.SKU), Node: node}, nil
		}),
		durable.NewActivity(actRelease, func(ctx context.Context, in ItemRequest) (Release, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Release{}, err
			}
			hold := "hold-" + in.Order + "-" + strings.ToLower(in.SKU)
			durable.ActivityLogger(ctx).Info(fmt.Sprintf("%s: released %s", actRelease, hold))
			return Release{Hold: hold, Node: node}, nil
		}),
		durable.NewActivity(actCharge, func(ctx context.Context, in ChargeRequest) (Payment, error) {
			if err := s.busy(ctx, 2); err != nil {
				return Payment{}, err
			}
			s.mu.Lock()
			s.charges[in.Order]++
			call := s.charges[in.Order]
			s.mu.Unlock()
			log := durable.ActivityLogger(ctx)
			if call == 1 {
				log.Warn(fmt.Sprintf("%s: gateway timed out charging %s", actCharge, money(in.AmountCents)))
				return Payment{}, errors.New("payment gateway timeout (transient)")
			}
			if in.Card == declinedCard {
				log.Info(fmt.Sprintf("%s: card %s declined", actCharge, maskCard(in.Card)))
				return Payment{Approved: false, Reason: "card declined: insufficient funds", Node: node}, nil
			}
			log.Info(fmt.Sprintf("%s: charged %s to %s", actCharge, money(in.AmountCents), maskCard(in.Card)))
			return Payment{Approved: true, AuthCode: "AUTH-" + strings.ToUpper(in.Order), Node: node}, nil
		}),
		durable.NewActivity(actLabel, func(ctx context.Context, in ShipRequest) (Label, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Label{}, err
			}
			return Label{Tracking: "1Z" + strings.ToUpper(strings.ReplaceAll(in.Order, "-", "")) + "US", Carrier: "UPS", Node: node}, nil
		}),
		durable.NewActivity(actNotify, func(ctx context.Context, in ShipRequest) (Notice, error) {
			if err := s.busy(ctx, 1); err != nil {
				return Notice{}, err
			}
			durable.ActivityLogger(ctx).Info(fmt.Sprintf("%s: e-mailed %s", actNotify, in.Customer))
			return Notice{Sent: "email", Node: node}, nil
		}),
	}
}

// busy stands for the work of an activity: units of s.work, or less when
// ctx ends (the runtime shuts down or cancels the activity). It then
// returns ctx.Err(), context.Canceled, which tells a runtime that is
// shutting down that the activity did not finish: the runtime hands it
// back, and another node runs it.
func (s *shop) busy(ctx context.Context, units int) error {
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

func money(cents int) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

func maskCard(card string) string {
	if len(card) < 4 {
		return card
	}
	return "****" + card[len(card)-4:]
}
