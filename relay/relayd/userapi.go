package relayd

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/relay/protocol"
	"github.com/trycua/cua-spacesd/relay/relayapi"
	"github.com/trycua/cua-spacesd/relay/store"
)

// maxJSONBody bounds the JSON body of a user or admin call.
const maxJSONBody = 64 << 10

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request, u store.User) {
	writeJSON(w, http.StatusOK, relayapi.Me{User: u})
}

func (s *Server) handleListComputers(w http.ResponseWriter, r *http.Request, u store.User) {
	cs, err := s.cfg.Store.Computers(r.Context(), u.ID)
	if err != nil {
		writeError(w, err)
		return
	}
	out := relayapi.ComputerList{Computers: make([]relayapi.Computer, 0, len(cs))}
	for _, c := range cs {
		cj := s.computerJSON(r.Context(), c, u.Name)
		cj.Role = protocol.RoleOwner
		out.Computers = append(out.Computers, cj)
	}
	// The computers shared with the caller, with the role each gives.
	shared, err := s.cfg.Store.SharedWith(r.Context(), u.ID)
	if err != nil {
		writeError(w, err)
		return
	}
	for name, role := range shared {
		c, err := s.cfg.Store.Computer(r.Context(), name)
		if err != nil || c.Owner == u.ID {
			continue
		}
		owner := ""
		if o, err := s.cfg.Store.User(r.Context(), c.Owner); err == nil {
			owner = o.Name
		}
		cj := s.computerJSON(r.Context(), c, owner)
		cj.Role = role
		out.Computers = append(out.Computers, cj)
	}
	slices.SortFunc(out.Computers, func(a, b relayapi.Computer) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, out)
}

// handleCreateComputer is POST /v1/computers: a new computer (201), or a
// new token for one the caller holds (200; its session ends with
// token_rotated).
func (s *Server) handleCreateComputer(w http.ResponseWriter, r *http.Request, u store.User) {
	var req relayapi.CreateComputer
	if err := readJSON(r, &req); err != nil {
		writeError(w, err)
		return
	}
	c, tok, rotated, err := s.cfg.Store.PutComputer(r.Context(), u.ID, req.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusCreated
	if rotated {
		status = http.StatusOK
		s.endSession(c.Name, protocol.CloseTokenRotated, "the computer's token was replaced")
		s.audit(store.AuditRegister, c.Name, "token rotated by "+u.Name)
	} else {
		s.audit(store.AuditRegister, c.Name, "registered by "+u.Name)
	}
	writeJSON(w, status, relayapi.ComputerToken{Computer: s.computerJSON(r.Context(), c, u.Name), Token: tok, URLs: spreadURLs(s.cfg.URLs, c.Name)})
}

// spreadURLs is the cluster's URL list in the order one computer is given
// it: each URL ranked by a hash of the computer's name with the URL
// (rendezvous hashing). A cluster's computers start on every node alike,
// though all nodes hand out the same list; when a node dies, its computers
// go on to the others alike, not all to the next node in the list (which
// the 10,000-computer bench showed with a turned list); and a node added
// to the list moves only the computers it then ranks first.
func spreadURLs(urls []string, computer string) []string {
	if len(urls) < 2 {
		return urls
	}
	// SHA-256, not FNV: URLs that differ in one last byte must rank
	// independently, and this runs once per registration.
	rank := func(u string) uint64 {
		sum := sha256.Sum256([]byte(computer + "\x00" + u))
		return binary.BigEndian.Uint64(sum[:8])
	}
	out := slices.Clone(urls)
	slices.SortStableFunc(out, func(x, y string) int { return cmp.Compare(rank(y), rank(x)) })
	return out
}

func (s *Server) ownComputer(w http.ResponseWriter, r *http.Request, u store.User) (store.Computer, bool) {
	name := r.PathValue("name")
	c, err := s.cfg.Store.Computer(r.Context(), name)
	if err != nil || c.Owner != u.ID {
		if err != nil && api.KindOf(err) != api.KindNotFound && api.KindOf(err) != api.KindInvalidArgument {
			writeError(w, err)
			return c, false
		}
		writeError(w, api.Errorf(api.KindNotFound, "computer %q: not found among yours", name))
		return c, false
	}
	return c, true
}

func (s *Server) handleGetComputer(w http.ResponseWriter, r *http.Request, u store.User) {
	if c, ok := s.ownComputer(w, r, u); ok {
		writeJSON(w, http.StatusOK, s.computerJSON(r.Context(), c, u.Name))
	}
}

// handleDeleteComputer removes the computer; its session ends with
// token_revoked.
func (s *Server) handleDeleteComputer(w http.ResponseWriter, r *http.Request, u store.User) {
	c, ok := s.ownComputer(w, r, u)
	if !ok {
		return
	}
	if err := s.cfg.Store.DeleteComputer(r.Context(), c.Name); err != nil {
		writeError(w, err)
		return
	}
	s.endSession(c.Name, protocol.CloseTokenRevoked, "the computer was unregistered")
	s.audit(store.AuditUnregister, c.Name, "by "+u.Name)
	writeJSON(w, http.StatusOK, relayapi.Deleted{Deleted: true})
}

// computerJSON is c as the API shows it, online (on any node) or not.
func (s *Server) computerJSON(ctx context.Context, c store.Computer, owner string) relayapi.Computer {
	out := relayapi.Computer{Name: c.Name, Owner: owner, CreatedMS: c.CreatedMS}
	if p, ok := s.presenceOf(ctx, c.Name); ok {
		out.Online, out.SinceMS, out.Node, out.DaemonVersion = true, p.SinceMS, p.Node, p.Daemon
	}
	return out
}

// readJSON decodes a bounded, strict JSON body.
func readJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxJSONBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return api.Errorf(api.KindInvalidArgument, "request body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return api.Errorf(api.KindInvalidArgument, "request body: data after the JSON value")
	}
	return nil
}
