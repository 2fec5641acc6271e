module example.com/vendorlib

go 1.26
