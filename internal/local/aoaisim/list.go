package aoaisim

import (
	"fmt"
	"net/http"
	"strconv"
)

// listPage is Azure's (and OpenAI's) cursor page.
type listPage[T any] struct {
	Object  string  `json:"object"`
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// pageQuery reads ?limit= (default def, 1..maxLimit) and ?after=.
func pageQuery(r *http.Request, def, maxLimit int) (limit int, after string, apiErr *apiError) {
	q := r.URL.Query()
	limit = def
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return 0, "", invalidRequest("limit", fmt.Sprintf("limit must be an integer between 1 and %d.", maxLimit))
		}
		limit = n
	}
	return limit, q.Get("after"), nil
}

// paginate returns the page of items (already in list order) that follows the
// item whose ID is after ("" for the first page). An unknown cursor gives an
// empty page.
func paginate[T any](items []T, id func(T) string, after string, limit int) listPage[T] {
	start := 0
	if after != "" {
		start = len(items)
		for i, it := range items {
			if id(it) == after {
				start = i + 1
				break
			}
		}
	}
	end := min(start+limit, len(items))
	page := listPage[T]{Object: "list", Data: append([]T{}, items[start:end]...), HasMore: end < len(items)}
	if len(page.Data) > 0 {
		first, last := id(page.Data[0]), id(page.Data[len(page.Data)-1])
		page.FirstID, page.LastID = &first, &last
	}
	return page
}
