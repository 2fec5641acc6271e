package goworkflows

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// commandStats are the calls per command from INFO commandstats.
type commandStats map[string]int

// readCommandStats reads INFO commandstats. The INFO command itself is
// left out: only the measurement issues it.
func readCommandStats(ctx context.Context, c *redis.Client) (commandStats, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	return parseCommandStats(info)
}

// parseCommandStats parses lines such as
// "cmdstat_xadd:calls=12,usec=80,usec_per_call=6.67,rejected_calls=0,failed_calls=0".
func parseCommandStats(info string) (commandStats, error) {
	stats := commandStats{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" {
			continue
		}
		for _, field := range strings.Split(fields, ",") {
			key, value, _ := strings.Cut(field, "=")
			if key != "calls" {
				continue
			}
			n, err := strconv.Atoi(value)
			if err != nil {
				return nil, fmt.Errorf("INFO commandstats: %q: %w", line, err)
			}
			stats[name] = n
		}
	}
	return stats, sc.Err()
}

// sub returns s - before, per command.
func (s commandStats) sub(before commandStats) commandStats {
	out := commandStats{}
	for name, n := range s {
		if d := n - before[name]; d != 0 {
			out[name] = d
		}
	}
	return out
}

// total sums the calls.
func (s commandStats) total() int {
	n := 0
	for _, calls := range s {
		n += calls
	}
	return n
}
