package weir

import "fmt"

// ExampleConfig_Check checks a configuration as New would, without building a middleware:
// what Weir's provider plugin checks every preset with.
func ExampleConfig_Check() {
	c := CreateConfig()
	c.Limiter.MaxConcurrent = "8"
	fmt.Println(c.Check())
	c.Admin.Path = "/_weir"
	fmt.Println(c.Check())
	// Output:
	// <nil>
	// weir: invalid configuration: admin.path: "/_weir" needs admin.token (or admin.tokenFile), or no one could use it
}
