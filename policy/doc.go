// Package policy loads, validates and compiles airlock policies.
package policy
