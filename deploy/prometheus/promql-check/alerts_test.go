package main

// Behaviour of Sluice's alert rules, evaluated by Prometheus' own PromQL engine over series
// loaded in its test storage: each case loads series, evaluates one rule's expression of
// deploy/prometheus/alerts.yml once a minute as Prometheus does, and applies the rule's `for`
// as the rule manager does (an alert fires once its expression has held for `for` without a
// gap). Run: go test ./... (tools/src/deploy/alerts-dashboard.test.ts runs it).

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/promqltest"
)

const alertsFile = "../alerts.yml"

// firingAfter loads `series`, evaluates alert `name` every minute from 0 to `minutes`, and
// returns the `table` label of each alert firing at the end.
func firingAfter(t *testing.T, name, series string, minutes int) []string {
	t.Helper()
	return firingBy(t, name, series, minutes, "table")
}

// firingBy is firingAfter returning the label `label` of each firing alert.
func firingBy(t *testing.T, name, series string, minutes int, label string) []string {
	t.Helper()
	groups, errs := rulefmt.ParseFile(alertsFile, false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", alertsFile, errs)
	}
	var rule *rulefmt.Rule
	for _, g := range groups.Groups {
		for i := range g.Rules {
			if g.Rules[i].Alert == name {
				rule = &g.Rules[i]
			}
		}
	}
	if rule == nil {
		t.Fatalf("no alert %s in %s", name, alertsFile)
	}
	storage := promqltest.LoadedStorage(t, series)
	engine := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	hold := time.Duration(rule.For)
	// Since when each series of the expression's result has been there without a gap.
	activeSince := map[string]time.Duration{}
	tableOf := map[string]string{}
	var now time.Duration
	for m := 0; m <= minutes; m++ {
		now = time.Duration(m) * time.Minute
		q, err := engine.NewInstantQuery(context.Background(), storage, nil, rule.Expr, time.Unix(0, 0).Add(now))
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s at %d min: %v", name, m, res.Err)
		}
		vector, err := res.Vector()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, sample := range vector {
			key := sample.Metric.String()
			seen[key] = true
			tableOf[key] = sample.Metric.Get(label)
			if _, ok := activeSince[key]; !ok {
				activeSince[key] = now
			}
		}
		for key := range activeSince {
			if !seen[key] {
				delete(activeSince, key) // resolved: a later return starts its `for` again
			}
		}
		q.Close()
	}
	var firing []string
	for key, since := range activeSince {
		if now-since >= hold {
			firing = append(firing, tableOf[key])
		}
	}
	sort.Strings(firing)
	return firing
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Every table last committed at time 0 (the series' value is the commit's Unix time); then for
// 40 minutes: silver_orders has bronze offsets waiting (on two pods, one of them at 0), bronze_orders
// and silver_idle have none, bronze_clicks's consumer lags while another table's does not.
const tables = `
load 1m
  sluice_merge_compaction_last_commit_timestamp_seconds{table="silver_orders"} 0x40
  sluice_merge_compaction_last_commit_timestamp_seconds{table="bronze_orders"} 0x40
  sluice_merge_compaction_last_commit_timestamp_seconds{table="silver_idle"} 0x40
  sluice_merge_compaction_last_commit_timestamp_seconds{table="bronze_clicks"} 0x40
  sluice_merge_compaction_table_waiting_offsets{table="silver_orders", pod="folder"} 120x40
  sluice_merge_compaction_table_waiting_offsets{table="silver_orders", pod="other"} 0x40
  sluice_merge_compaction_table_waiting_offsets{table="bronze_orders", pod="a"} 0x40
  sluice_merge_compaction_table_waiting_offsets{table="silver_idle", pod="folder"} 0x40
  sluice_merge_compaction_table_waiting_offsets{table="bronze_clicks", pod="a"} 0x10 5x30
  sluice_merge_compaction_consumer_lag_messages{topic="sluice.orders.valid", partition="0"} 900x40
`

func TestTableNotCommittingFiresForTablesWithWorkWaiting(t *testing.T) {
	// silver_orders: 10 min without a commit with work waiting (> 600 s from 11 min), then 5 min
	// pending. bronze_clicks: waiting from 11 min, firing from 16 + 1. The idle ones never, even
	// with another topic lagging (the rule used to join on the process's total lag).
	if got := firingAfter(t, "SluiceTableNotCommitting", tables, 30); !equal(got, []string{"bronze_clicks", "silver_orders"}) {
		t.Fatalf("firing at 30 min: %v, want [bronze_clicks silver_orders]", got)
	}
	// Before its 5 minutes are up, nothing fires yet.
	if got := firingAfter(t, "SluiceTableNotCommitting", tables, 14); len(got) != 0 {
		t.Fatalf("firing at 14 min: %v, want none", got)
	}
}

func TestFoldNotReportingFiresWhenNoProcessReportsSilver(t *testing.T) {
	onlyBronze := `
load 1m
  sluice_merge_compaction_table_waiting_offsets{table="bronze_orders", pod="a"} 0x40
`
	alert := "SluiceFoldNotReporting"
	// absent() carries no table label: the alert fires with an empty one.
	if got := firingAfter(t, alert, onlyBronze, 30); !equal(got, []string{""}) {
		t.Fatalf("%s with no silver series: %v, want one alert", alert, got)
	}
	if got := firingAfter(t, alert, tables, 30); len(got) != 0 {
		t.Fatalf("%s with silver reported: %v, want none", alert, got)
	}
}

func TestValidateNotCommittingFiresForAValidateThatNeverCommitted(t *testing.T) {
	// Crash-looping from its start: lag reported, no committed series at all.
	neverCommitted := `
load 1m
  sluice_validate_consumer_lag_messages{topic="sluice.raw", partition="0"} 5000x40
  sluice_validate_transaction_duration_seconds_count{outcome="aborted"} 0+3x40
`
	if got := firingAfter(t, "SluiceValidateNotCommitting", neverCommitted, 30); !equal(got, []string{""}) {
		t.Fatalf("never committed: %v, want one alert", got)
	}
	committing := `
load 1m
  sluice_validate_consumer_lag_messages{topic="sluice.raw", partition="0"} 5000x40
  sluice_validate_transaction_duration_seconds_count{outcome="committed"} 0+10x40
`
	if got := firingAfter(t, "SluiceValidateNotCommitting", committing, 30); len(got) != 0 {
		t.Fatalf("committing: %v, want none", got)
	}
}

func TestDlqRateSpikeJudgesEachContractByItsOwnEvents(t *testing.T) {
	// orders: 1,000 valid/s, 2/s dead-lettered (0.2 %); inventory: 5/s, every one dead-lettered
	// (0.5 % of all events, 100 % of its own); clickstream: 1,000/s valid, 20/s dead (2 %).
	rates := `
load 1m
  sluice_validate_events_out_total{outcome="valid", contract="orders"} 0+60000x40
  sluice_validate_dlq_records_total{reason="RULE_RANGE", contract="orders"} 0+120x40
  sluice_validate_dlq_records_total{reason="EVENT_SCHEMA_MISMATCH", contract="inventory"} 0+300x40
  sluice_validate_events_out_total{outcome="valid", contract="clickstream"} 0+60000x40
  sluice_validate_dlq_records_total{reason="RULE_RANGE", contract="clickstream"} 0+1200x40
`
	if got := firingBy(t, "SluiceDlqRateSpike", rates, 30, "contract"); !equal(got, []string{"clickstream", "inventory"}) {
		t.Fatalf("firing: %v, want [clickstream inventory]", got)
	}
	// Events naming no known contract are a share of everything consumed: 2/s of 50k/s is not a
	// spike, 600/s is.
	unknown := func(perMinute int) string {
		return fmt.Sprintf(`
load 1m
  sluice_validate_events_in_total{outcome="consumed"} 0+3000000x40
  sluice_validate_events_out_total{outcome="valid", contract="orders"} 0+2990000x40
  sluice_validate_dlq_records_total{reason="CONTRACT_UNKNOWN", contract="unknown"} 0+%dx40
`, perMinute)
	}
	if got := firingBy(t, "SluiceDlqRateSpike", unknown(120), 30, "contract"); len(got) != 0 {
		t.Fatalf("unknown at 2/s of 50k/s: %v, want none", got)
	}
	if got := firingBy(t, "SluiceDlqRateSpike", unknown(36000), 30, "contract"); !equal(got, []string{"unknown"}) {
		t.Fatalf("unknown at 600/s of 50k/s: %v, want [unknown]", got)
	}
}

func TestServiceDownFiresWhenNoProcessIsScraped(t *testing.T) {
	gone := `
load 1m
  sluice_ingest_process_memory_bytes{kind="rss", pod="a"} 1e8x5
`
	if got := firingAfter(t, "SluiceIngestDown", gone, 30); !equal(got, []string{""}) {
		t.Fatalf("ingest gone after 5 min: %v, want one alert", got)
	}
	if got := firingAfter(t, "SluiceIngestDown", gone, 8); len(got) != 0 {
		t.Fatalf("ingest gone for 3 min: %v, want none yet", got)
	}
	up := `
load 1m
  sluice_ingest_process_memory_bytes{kind="rss", pod="a"} 1e8x40
`
	if got := firingAfter(t, "SluiceIngestDown", up, 30); len(got) != 0 {
		t.Fatalf("ingest up: %v, want none", got)
	}
}
