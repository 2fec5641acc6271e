module github.com/duradyn/duradyn

go 1.26
