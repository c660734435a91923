"""The table bench/sandbox and bench/floor print from run_rounds' results
(bench/lib.sh): each command's runs, median and quartiles in ms, and its
median's ratio to bwrap's."""
import json
import statistics


def rows(out, rounds, width=14):
    """Prints the table of OUT/r1.json … rROUNDS.json; returns the medians."""
    times = {}
    for r in range(1, rounds + 1):
        for res in json.load(open(f"{out}/r{r}.json"))["results"]:
            times.setdefault(res["command"], []).extend(res["times"])
    med = {k: statistics.median(v) for k, v in times.items()}
    b = med["bwrap"]
    print(f"\n{'command':{width}} {'runs':>5} {'median ms':>10} {'p25 ms':>8} {'p75 ms':>8} {'x bwrap':>8}")
    for k, v in times.items():
        q = statistics.quantiles(v, n=4)
        print(f"{k:{width}} {len(v):5} {med[k]*1000:10.2f} {q[0]*1000:8.2f} {q[2]*1000:8.2f} {med[k]/b:8.2f}")
    return med
