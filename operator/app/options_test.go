package app

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/loopwatch/loopwatch/operator/faults"
)

func TestFlagsSetOptions(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		check func(o Options) bool
	}{
		{name: "leaves every fault off by default", args: nil, check: func(o Options) bool {
			return o.Faults == faults.Modes{NPlusOneFanout: 50} && o.LeaderElection && !o.MetricsInsecure
		}},
		{name: "turns on the hot loop", args: []string{"--fault-hot-loop"}, check: func(o Options) bool { return o.Faults.HotLoop }},
		{name: "turns on N+1 listing", args: []string{"--fault-n-plus-one"}, check: func(o Options) bool { return o.Faults.NPlusOne }},
		{name: "sets the slow store latency", args: []string{"--fault-slow-store=45s"}, check: func(o Options) bool { return o.Faults.SlowStore == 45*time.Second }},
		{name: "turns on the store outage", args: []string{"--fault-store-outage"}, check: func(o Options) bool { return o.Faults.StoreOutage }},
		{name: "turns on the fight with an identity", args: []string{"--fault-fight", "--fault-fight-as=system:serviceaccount:x:y"},
			check: func(o Options) bool { return o.Faults.Fight && o.FightAs == "system:serviceaccount:x:y" }},
		{name: "turns off leader election", args: []string{"--fault-no-leader-election"}, check: func(o Options) bool { return o.Faults.NoLeaderElection }},
		{name: "sets the mass update period", args: []string{"--fault-mass-update-every=2m"}, check: func(o Options) bool { return o.Faults.MassUpdateEvery == 2*time.Minute }},
		{name: "turns on the failing store", args: []string{"--fault-failing-store"}, check: func(o Options) bool { return o.Faults.FailingStore }},
		{name: "serves plain metrics on request", args: []string{"--metrics-insecure"}, check: func(o Options) bool { return o.MetricsInsecure }},
		{name: "serves metrics from a registry of its own", args: []string{"--fault-metrics-own-registry", "--metrics-insecure"},
			check: func(o Options) bool { return o.Faults.MetricsOwnRegistry && o.MetricsInsecure }},
		{name: "sets the client rate limit and workers", args: []string{"--kube-api-qps=12.5", "--kube-api-burst=30", "--max-concurrent-reconciles=9"},
			check: func(o Options) bool { return o.KubeQPS == 12.5 && o.KubeBurst == 30 && o.MaxConcurrentReconciles == 9 }},
		{name: "collects watched namespaces", args: []string{"--namespace=a", "--namespace=b"},
			check: func(o Options) bool { return len(o.Namespaces) == 2 && o.Namespaces[1] == "b" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Defaults()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.BindFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if !c.check(o) {
				t.Errorf("options after %v: %+v", c.args, o)
			}
		})
	}
}

func TestFlagsRejectABadNumber(t *testing.T) {
	o := Defaults()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--kube-api-qps=fast"}); err == nil {
		t.Fatal("--kube-api-qps=fast accepted")
	}
}

func TestValidateReportsEveryProblemWithItsFlag(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("the defaults are refused: %v", err)
	}
	o := Defaults()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse([]string{
		"--store-delete-timeout=-1s", "--max-concurrent-reconciles=-2", "--kube-api-qps=-5",
		"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=10s",
		"--fault-fight-as=system:serviceaccount:x:y",
		"--fault-metrics-own-registry", "--metrics-bind-address=0",
	}); err != nil {
		t.Fatal(err)
	}
	err := o.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"--store-delete-timeout: must not be negative, got -1s",
		"--max-concurrent-reconciles: must not be negative, got -2",
		"--kube-api-qps: must not be negative, got -5",
		"--leader-election-lease-duration: must be longer than the renew deadline (10s), got 10s",
		"--fault-fight-as: names the second writer of --fault-fight, which is off",
		"--fault-metrics-own-registry: serves plain HTTP: it needs --metrics-insecure",
		"--fault-metrics-own-registry: replaces the metrics endpoint, which --metrics-bind-address turns off",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 7 {
		t.Errorf("%d problems reported, want 7:\n%v", n, err)
	}
}

// Every duration and count flag is checked under its own name, without Validate naming it: a
// flag added to BindFlags is covered.
func TestValidateRefusesEveryNegativeDurationAndCount(t *testing.T) {
	o := Defaults()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	var args, want []string
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		switch g.Get().(type) {
		case time.Duration:
			args = append(args, "--"+f.Name+"=-1s")
			want = append(want, "--"+f.Name+": must not be negative, got -1s")
		case int, float32:
			args = append(args, "--"+f.Name+"=-1")
			want = append(want, "--"+f.Name+": must not be negative, got -1")
		}
	})
	// 13 durations, 3 counts and the API rate as BindFlags declares them today.
	if len(args) != 17 {
		t.Errorf("%d duration and count flags, want 17: %v", len(args), args)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	err := o.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q missing from:\n%v", w, err)
		}
	}
}
