package stack

import "testing"

func TestCommandLineQuotesWhatAShellWouldSplit(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "plain flags stay as they are", args: []string{"--secure-port=6443", "-v"}, want: "/bin/x --secure-port=6443 -v"},
		{name: "spaces and globs are quoted", args: []string{"--name=a b", "--glob=*.yaml"}, want: `/bin/x "--name=a b" "--glob=*.yaml"`},
		{name: "an empty argument stays visible", args: []string{""}, want: `/bin/x ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandLine("/bin/x", tc.args); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
