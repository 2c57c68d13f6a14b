package registry

import "strings"

// SharedFile lists the computers this bridge put on a relay only because a
// Space was shared (share_space on a Space not on the relay yet): unsharing
// everyone takes those off the relay again, while a Space the owner
// registered (relay register) stays, since the owner's own reach is not a
// share.
const SharedFile = "relay-shared.json"

// SharedAttach is one computer attached because of a share.
type SharedAttach struct {
	// Relay is the relay's URL, Computer the computer's name on it.
	Relay    string `json:"relay"`
	Computer string `json:"computer"`
	// Space is the Space as the bridge names it.
	Space string `json:"space"`
}

type sharedDoc struct {
	Attached []SharedAttach `json:"attached"`
}

// MarkShareAttached remembers that a computer was attached to the relay
// because of a share.
func (r *Registry) MarkShareAttached(a SharedAttach) error {
	return r.changeShared(func(d *sharedDoc) {
		d.Attached = dropShared(d.Attached, a.Relay, a.Computer)
		d.Attached = append(d.Attached, a)
	})
}

// ForgetShareAttached forgets the mark of a computer (it left the relay,
// or the owner registered it on purpose).
func (r *Registry) ForgetShareAttached(relay, computer string) error {
	return r.changeShared(func(d *sharedDoc) { d.Attached = dropShared(d.Attached, relay, computer) })
}

// ShareAttached answers the mark of a computer, if it was attached because
// of a share.
func (r *Registry) ShareAttached(relay, computer string) (SharedAttach, bool, error) {
	unlock, err := r.lock(false)
	if err != nil {
		return SharedAttach{}, false, err
	}
	defer unlock()
	var d sharedDoc
	if err := r.readJSON(SharedFile, &d); err != nil {
		return SharedAttach{}, false, err
	}
	for _, a := range d.Attached {
		if sameShared(a, relay, computer) {
			return a, true, nil
		}
	}
	return SharedAttach{}, false, nil
}

func (r *Registry) changeShared(change func(*sharedDoc)) error {
	unlock, err := r.lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	var d sharedDoc
	if err := r.readJSON(SharedFile, &d); err != nil {
		return err
	}
	change(&d)
	return r.writeJSON(SharedFile, d, spacesMode)
}

func dropShared(as []SharedAttach, relay, computer string) []SharedAttach {
	out := as[:0]
	for _, a := range as {
		if !sameShared(a, relay, computer) {
			out = append(out, a)
		}
	}
	return out
}

func sameShared(a SharedAttach, relay, computer string) bool {
	return strings.EqualFold(strings.TrimRight(a.Relay, "/"), strings.TrimRight(relay, "/")) && a.Computer == computer
}
