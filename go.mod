module github.com/trycua/cua-spacesd

go 1.26.8

require (
	github.com/creack/pty v1.1.24 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/jezek/xgb v1.1.1 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/image v0.48.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
)
