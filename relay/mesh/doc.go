// Package mesh is the data path between relay nodes of one cluster, carried
// over the cluster's NATS (the store's in-process connection, which reaches
// every node through the routes):
//
//   - a trunk per pair of nodes: a byte stream over two NATS subjects
//     (pipe.go), numbered so that a lost message resets the trunk instead
//     of corrupting it, with yamux (tunnel.Config) on top for streams and
//     their flow control (mesh.go);
//   - the directory of attached computers: the home node of a computer
//     subscribes relay.computer.<name> while its session lives, and a
//     request there answers the node's name (directory.go);
//   - notices: a share change, a removal or a new session made on one node
//     reaches the node that holds the computer's session (notice.go);
//   - the open request a node writes first on a trunk stream, and the home
//     node's answer (open.go).
//
// Nothing here knows a session or a user: relayd decides what a stream
// carries and who may open it.
package mesh
