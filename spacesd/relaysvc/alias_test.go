package relaysvc_test

import "net"

type netConn = net.Conn
