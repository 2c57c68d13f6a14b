package spacetools

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/mcp/mcpserve"
)

// ClipboardSet is the structured answer of space_clipboard_set.
type ClipboardSet struct {
	// Chars and Bytes measure the text put on the clipboard.
	Chars int `json:"chars"`
	Bytes int `json:"bytes"`
}

func spaceClipboardGetTool() *Tool {
	return &Tool{
		Name:        "space_clipboard_get",
		Title:       "Read the clipboard",
		Hints:       mcpserve.Hints{ReadOnly: true},
		Output:      OutputOf[api.ClipboardText](),
		Description: "Read the text on a Space's desktop clipboard (the X CLIPBOARD selection), whichever app put it there.",
		Schema:      Object(nil, map[string]*jsonschema.Schema{}),
		Requires:    []api.Feature{api.FeatureClipboardText},
		Errors:      []api.Kind{api.KindTimeout, api.KindLimitExceeded},
		Result:      "text: the clipboard's text; structured {text}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			text, err := c.Space.Client.ClipboardGet(ctx)
			if err != nil {
				return nil, err
			}
			shown := text
			if text == "" {
				shown = "(the clipboard holds no text)"
			}
			return &mcpserve.Result{Text: shown, Structured: api.ClipboardText{Text: text}}, nil
		},
	}
}

func spaceClipboardSetTool() *Tool {
	return &Tool{
		Name:        "space_clipboard_set",
		Title:       "Set the clipboard",
		Hints:       mcpserve.Hints{Destructive: true, Idempotent: true},
		Output:      OutputOf[ClipboardSet](),
		Description: "Put text on a Space's desktop clipboard (the X CLIPBOARD and PRIMARY selections), for an app to paste; it replaces what was there.",
		Schema: Object([]string{"text"}, map[string]*jsonschema.Schema{
			"text": Str("The text (UTF-8; the Space's capabilities say its limit, max_clipboard_bytes)."),
		}),
		Requires: []api.Feature{api.FeatureClipboardText},
		Errors:   []api.Kind{api.KindTimeout},
		Result:   "{chars, bytes}",
		Run: func(ctx context.Context, c *Call) (*mcpserve.Result, error) {
			var a struct {
				Text string `json:"text"`
			}
			if err := Decode(c, "space_clipboard_set", &a); err != nil {
				return nil, err
			}
			if err := c.Space.Client.ClipboardSet(ctx, a.Text); err != nil {
				return nil, err
			}
			n := utf8.RuneCountInString(a.Text)
			return &mcpserve.Result{Text: fmt.Sprintf("the clipboard holds the text (%d characters)", n), Structured: ClipboardSet{Chars: n, Bytes: len(a.Text)}}, nil
		},
	}
}
