package svcgateway

import (
	"bytes"
	"encoding/json"
)

// String returns a pointer to v, for optional fields: Description: svcgateway.String("order 42").
func String(v string) *string { return &v }

// Int returns a pointer to v, for optional integer fields (Limit, ExpiresIn).
func Int(v int64) *int64 { return &v }

// Bool returns a pointer to v, for optional boolean fields.
func Bool(v bool) *bool { return &v }

// Ptr returns a pointer to v, for optional fields of any type (an enum: svcgateway.Ptr(svcgateway.ChainBase)).
func Ptr[T any](v T) *T { return &v }

// Nullable is an optional field that may also be sent as JSON null, to clear a value (a PATCH's
// description): leave the field nil to not send it, set it to Null[T]() to send null, or to
// Value(v) to send v.
type Nullable[T any] struct {
	Value T
	Null  bool
}

// Null is a Nullable that sends JSON null.
func Null[T any]() *Nullable[T] { return &Nullable[T]{Null: true} }

// Value is a Nullable that sends v.
func Value[T any](v T) *Nullable[T] { return &Nullable[T]{Value: v} }

// MarshalJSON writes null or the value.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// UnmarshalJSON reads null or a value.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		var zero T
		n.Value, n.Null = zero, true
		return nil
	}
	n.Null = false
	return json.Unmarshal(data, &n.Value)
}
