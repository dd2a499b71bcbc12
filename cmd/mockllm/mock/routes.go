package mock

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/stampede-bench/stampede/httpwire"
)

// endpoint is one path the server answers, with the method it accepts.
type endpoint struct {
	method string
	serve  func(s *Server, cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) (scheduled bool)
}

// endpoints are vLLM's OpenAI-compatible server paths that the mock
// implements.
var endpoints = map[string]endpoint{
	"/v1/models":           {"GET", (*Server).serveModels},
	"/health":              {"GET", (*Server).serveEmpty},
	"/version":             {"GET", (*Server).serveVersion},
	"/metrics":             {"GET", (*Server).serveMetrics},
	"/v1/completions":      {"POST", (*Server).serveCompletions},
	"/v1/chat/completions": {"POST", (*Server).serveChat},
	"/v1/responses":        {"POST", (*Server).serveResponses},
	"/v1/messages":         {"POST", (*Server).serveMessages},
	"/v1/embeddings":       {"POST", (*Server).serveEmbeddings},
	"/pooling":             {"POST", (*Server).servePooling},
	"/v1/rerank":           {"POST", (*Server).serveRerank},
	"/rerank":              {"POST", (*Server).serveRerank},
	"/v2/rerank":           {"POST", (*Server).serveRerank},
	"/tokenize":            {"POST", (*Server).serveTokenize},
	"/detokenize":          {"POST", (*Server).serveDetokenize},
	"/start_profile":       {"POST", (*Server).serveEmpty},
	"/stop_profile":        {"POST", (*Server).serveEmpty},
	"/reset_prefix_cache":  {"POST", (*Server).serveResetPrefixCache},
}

// route answers req or schedules it; it returns true when the response
// now belongs to the writer.
func (s *Server) route(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	path := req.target
	if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	ep, ok := endpoints[string(path)]
	switch {
	case !ok:
		s.replyError(cn, ls, req, 404, "Not Found")
		return false
	case string(req.method) != ep.method:
		s.replyError(cn, ls, req, 405, "Method Not Allowed")
		return false
	}
	return ep.serve(s, cn, ls, req, arrivalNs)
}

// reply sends a complete response with a JSON body (or none, if body is
// nil), closing the connection afterwards if the request asked for that.
func (s *Server) reply(cn *conn, ls *loopState, req *httpRequest, status int, body []byte) {
	if body == nil {
		ls.out = httpwire.AppendStatusLine(ls.out[:0], status, httpwire.ReasonPhrase(status))
		ls.out = httpwire.AppendContentLength(ls.out, 0)
		if req.close {
			ls.out = httpwire.AppendHeader(ls.out, "connection", "close")
		}
		ls.out = httpwire.AppendEndOfHeaders(ls.out)
	} else {
		ls.out = appendJSONResponse(ls.out[:0], status, body, req.close)
	}
	cn.send(ls.out, &s.clock)
	if req.close {
		cn.close()
	}
}

// replyError sends vLLM's error JSON.
func (s *Server) replyError(cn *conn, ls *loopState, req *httpRequest, status int, msg string) {
	s.stats.errors.Add(1)
	s.reply(cn, ls, req, status, appendErrorBody(nil, status, errorType(status), msg))
}

func (s *Server) replyAPIError(cn *conn, ls *loopState, req *httpRequest, e *apiError) {
	s.stats.errors.Add(1)
	s.reply(cn, ls, req, e.status, appendErrorBody(nil, e.status, e.typ, e.msg))
}

// errorType is the "type" vLLM puts in an error of this status.
func errorType(status int) string {
	switch status {
	case 400, 413, 431:
		return "BadRequestError"
	case 404:
		return "NotFoundError"
	case 405:
		return "MethodNotAllowed"
	case 429:
		return "TooManyRequestsError"
	case 501, 505:
		return "NotImplementedError"
	case 503:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// appendErrorBody appends {"error":{"message","type","param":null,"code"}},
// the shape of vLLM's ErrorResponse.
func appendErrorBody(dst []byte, status int, typ, msg string) []byte {
	b, _ := json.Marshal(errorBody{Error: errorDetail{Message: msg, Type: typ, Code: status}})
	return append(dst, b...)
}

// appendErrorResponse appends a whole error response.
func appendErrorResponse(dst []byte, status int, typ, msg string, closeAfter bool) []byte {
	return appendJSONResponse(dst, status, appendErrorBody(nil, status, typ, msg), closeAfter)
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return dst, fmt.Errorf("encode %q as JSON: %w", s, err)
	}
	return append(dst, b...), nil
}

// marshalReply encodes v as the JSON body of a 200 response.
func (s *Server) marshalReply(cn *conn, ls *loopState, req *httpRequest, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.replyError(cn, ls, req, 500, "encode response: "+err.Error())
		return
	}
	s.reply(cn, ls, req, 200, b)
}
