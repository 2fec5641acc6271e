module example.com/shop

go 1.26

require (
	example.com/vendorlib v0.0.0
	github.com/duradyn/duradyn v0.0.0
)

replace (
	example.com/vendorlib => ./vendorlib
	github.com/duradyn/duradyn => ./duradyn
)
