// Command promql-check validates Sluice's Prometheus alert rules and Grafana panel queries with
// Prometheus' own parsers (what `promtool check rules` does), offline:
//
//	promql-check deploy/prometheus/alerts.yml deploy/grafana/dashboards/*.json
//
// Rule files go through rulefmt (YAML shape, PromQL, label and annotation templates);
// dashboard targets through the PromQL parser after Grafana's variables are given sample values.
// Exits 1 listing every problem.
package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

type panel struct {
	Title   string  `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// Grafana variables are not PromQL; give them values of the right kind before parsing.
var grafanaVars = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)

func substitute(expr string) string {
	return grafanaVars.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.HasPrefix(v, "$__") {
			return "5m"
		}
		return "x"
	})
}

// Sluice names are legacy-valid (snake_case); the stricter scheme catches a stray character.
var promql = parser.NewParser(parser.Options{})

func checkDashboard(path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	var dash struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		return []string{fmt.Sprintf("%s: %v", path, err)}
	}
	var problems []string
	var visit func([]panel)
	visit = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if _, err := promql.ParseExpr(substitute(t.Expr)); err != nil {
					problems = append(problems, fmt.Sprintf("%s: panel %q [%s]: %v", path, p.Title, t.RefID, err))
				}
			}
			visit(p.Panels)
		}
	}
	visit(dash.Panels)
	return problems
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: promql-check <rules.yml|dashboard.json>...")
		os.Exit(2)
	}
	var problems []string
	checked := 0
	for _, path := range os.Args[1:] {
		checked++
		if strings.HasSuffix(path, ".json") {
			problems = append(problems, checkDashboard(path)...)
			continue
		}
		groups, errs := rulefmt.ParseFile(path, false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("%s: %v", path, e))
		}
		if groups != nil && len(groups.Groups) == 0 {
			problems = append(problems, path+": no rule groups")
		}
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("promql-check: %d files ok\n", checked)
}
