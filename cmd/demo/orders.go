package main

import "github.com/duradyn/duradyn/examples/orders"

// The order workflow lives in package orders, which the sample worker
// (examples/hello) serves too; these names are the demo's for it.
type (
	// Order is ProcessOrder's input.
	Order = orders.Order
	// Line is one article of an order.
	Line = orders.Line
	// Delivery is the payload of the DeliveryConfirmed event.
	Delivery = orders.Delivery
	// Receipt is ProcessOrder's result.
	Receipt = orders.Receipt

	shop = orders.Shop
)

const (
	actCharge              = orders.ActCharge
	eventDelivery          = orders.EventDelivery
	statusShipping         = orders.StatusShipping
	statusAwaitingDelivery = orders.StatusAwaitingDelivery
	statusAwaitingPickup   = orders.StatusAwaitingPickup
	kvState                = orders.KVState
	declinedCard           = orders.DeclinedCard
)

var (
	processOrder = orders.ProcessOrder
	shipOrder    = orders.ShipOrder
	newShop      = orders.NewShop
	shipInstance = orders.ShipInstance
	money        = orders.Money
	maskCard     = orders.MaskCard
)
