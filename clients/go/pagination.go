package svcgateway

import (
	"context"
	"net/url"
)

// Page is one page of a paged list, newest first; NextCursor is the startingAfter of the next page.
type Page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"hasMore"`
	NextCursor *string `json:"nextCursor"`
}

// List is a list the gateway returns whole (no paging).
type List[T any] struct {
	Data []T `json:"data"`
}

// Iter walks every item of a paged list, fetching the next page (with startingAfter set to the
// previous page's nextCursor) when one is used up:
//
//	it := client.Payments.ListAll(ctx, &svcgateway.PaymentListParams{Limit: svcgateway.Int(50)})
//	for it.Next() {
//		payment := it.Current()
//		…
//	}
//	if err := it.Err(); err != nil { … }
//
// Nothing is requested before the first Next. An Iter is for one goroutine.
type Iter[T any] struct {
	ctx     context.Context
	t       *transport
	request request
	opts    []RequestOption
	page    *Page[T]
	index   int
	current T
	err     error
}

func newIter[T any](ctx context.Context, t *transport, r request, opts []RequestOption) *Iter[T] {
	return &Iter[T]{ctx: ctx, t: t, request: r, opts: opts}
}

// Next advances to the next item, fetching a page when needed; false at the end or on an error (see Err).
func (it *Iter[T]) Next() bool {
	for it.err == nil {
		if it.page != nil && it.index < len(it.page.Data) {
			it.current = it.page.Data[it.index]
			it.index++
			return true
		}
		r := it.request
		if it.page != nil {
			if !it.page.HasMore || it.page.NextCursor == nil || *it.page.NextCursor == "" {
				return false
			}
			r.query = url.Values{}
			for name, values := range it.request.query {
				r.query[name] = values
			}
			r.query.Set("startingAfter", *it.page.NextCursor)
		}
		it.page, it.err = call[Page[T]](it.ctx, it.t, r, it.opts)
		it.index = 0
	}
	return false
}

// Current is the item Next advanced to.
func (it *Iter[T]) Current() T { return it.current }

// Err is the error that stopped the iteration, or nil when it ran to the end.
func (it *Iter[T]) Err() error { return it.err }

// Page is the page the current item came from (nil before the first Next).
func (it *Iter[T]) Page() *Page[T] { return it.page }
