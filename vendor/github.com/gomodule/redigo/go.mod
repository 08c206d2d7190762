module github.com/gomodule/redigo

go 1.17
