package procsvc_test

import (
	"testing"

	"github.com/trycua/cua-spacesd/api"
	"github.com/trycua/cua-spacesd/internal/proctest"
	"github.com/trycua/cua-spacesd/spacesd/spacesdtest"
)

func TestTimeoutKillsTreeHTTP(t *testing.T) {
	t.Parallel()
	c := spacesdtest.Start(t, spacesdtest.Options{}).Client
	info, err := c.Start(t.Context(), api.StartRequest{Command: api.Command{Shell: "sleep 100 & sleep 100", TimeoutMS: 300}})
	if err != nil {
		t.Fatal(err)
	}
	exit := waitExit(t, c, info.ID)
	if !exit.TimedOut || exit.Signal != "KILL" {
		t.Fatalf("exit %+v", exit)
	}
	proctest.AssertGroupGone(t, info.PID)
}
