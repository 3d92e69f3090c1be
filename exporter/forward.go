package exporter

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// forward passes a webhook batch a standby received to its leader, and the leader's answer back:
// a Service spreads the API servers' connections over every ready replica, and only the leader
// counts. It returns false (nothing written) when there is no leader to forward to.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body []byte) bool {
	e := s.exporter
	rp := e.repl
	leader := e.Leader()
	addr, ok := replicaAddress(leader)
	if !ok || leader == rp.cfg.Identity || e.Role() != RoleStandby {
		return false
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "https://"+addr+WebhookPath, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ReplicaHeader, rp.cfg.Identity)
	req.ContentLength = int64(len(body))
	resp, err := rp.client.Do(req)
	if err != nil {
		s.log.Debug("Forwarding a batch to the leader failed", "leader", leader, "err", err)
		return false
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode == http.StatusOK {
		rp.metrics.forwarded.WithLabelValues(ForwardOK).Inc()
	} else {
		rp.metrics.forwarded.WithLabelValues(ForwardRefused).Inc()
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
	return true
}
