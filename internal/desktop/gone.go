package desktop

import "errors"

// ErrGone: what a request names was there and is no more (an element of
// a desktop's accessibility tree whose window closed). The API answers
// 410, where a name that never made sense is ErrNotFound's 404.
var ErrGone = errors.New("gone")
