module github.com/dynoxide/dynoxide

go 1.25.0
