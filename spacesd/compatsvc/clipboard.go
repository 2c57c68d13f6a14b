package compatsvc

import "context"

type clipboardResult struct {
	Content string `json:"content"`
}

// copyToClipboard answers the clipboard's text (CLIPBOARD, "" when nobody
// owns it), as computer-server's pyperclip.paste did.
func copyToClipboard(ctx context.Context, c *conn, _ none) (any, error) {
	text, err := c.svc.desk.ClipboardGet(ctx)
	if err != nil {
		return nil, err
	}
	return clipboardResult{Content: text}, nil
}

type setClipboardParams struct {
	Text string `json:"text"`
}

func setClipboard(ctx context.Context, c *conn, p setClipboardParams) (any, error) {
	return nil, c.svc.desk.ClipboardSet(ctx, p.Text)
}
