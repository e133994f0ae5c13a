"""The ratio line of scripts/bench-instructions: patched over unpatched
mean counts, from one count per type-cache layout (a line each in the two
files, line i of both counted under the same layout, seed i), with 95 %
intervals.

    python bench_ratio.py UNPATCHED.counts PATCHED.counts PER API MODE STATS UNIT [LABEL]

LABEL (default "patch") names what the second file adds to the first:
"fallback alone" (the fallback's middleware over unpatched vLLM),
"fallback, patch present" (the middleware over patched vLLM).

The interval printed first is the paired one: the two variants are counted
under the same layouts (bench_instructions.py's relayout), so the
difference of each layout's two counts is the patch's cost in that
layout, and the interval is Student's t on those L differences, over the
unpatched mean (whose own spread, a fraction of a percent of a ratio
within a few percent of 1, is allowed for by the delta method). The
unpaired one beside it treats the two columns as independent draws (how
the counts were read before the layouts were paired); where pairing works
it is several times wider. The added instructions per UNIT (PER responses
or tokens per layout) are given with their own interval.
"""

import math
import statistics
import sys

# Student's t, two-sided 95 %, by degrees of freedom; 1.96 beyond.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
        18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
        26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df):
    """The t quantile for df degrees of freedom, the next smaller df's
    where the table skips (a little wider, never narrower)."""
    return T975[max(k for k in T975 if k <= df)] if df <= 120 else 1.96


def paired(u, p):
    """(ratio, low, high, added, half width of added) from paired counts."""
    mu, mp = statistics.fmean(u), statistics.fmean(p)
    d = [b - a for a, b in zip(u, p)]
    md = statistics.fmean(d)
    ratio = mp / mu
    se_d = statistics.stdev(d) / math.sqrt(len(d))
    se_u = statistics.stdev(u) / math.sqrt(len(u))
    t = t975(len(d) - 1)
    # ratio = 1 + md/mu: var ~ (se_d/mu)^2 + (md/mu)^2 (se_u/mu)^2
    se = math.sqrt((se_d / mu) ** 2 + (md / mu) ** 2 * (se_u / mu) ** 2)
    return ratio, ratio - t * se, ratio + t * se, md, t * se_d


def unpaired(u, p):
    """(low, high) of the ratio of means, the columns taken as independent."""
    mu, mp = statistics.fmean(u), statistics.fmean(p)
    ratio = mp / mu
    se = ratio * math.sqrt(statistics.variance(p) / len(p) / mp**2 + statistics.variance(u) / len(u) / mu**2)
    t = t975(len(u) + len(p) - 2)
    return ratio - t * se, ratio + t * se


def main():
    u_path, p_path, per, api, mode, stats, unit = sys.argv[1:8]
    label = sys.argv[8] if len(sys.argv) > 8 else "patch"
    per = int(per)
    u = [int(x) for x in open(u_path).read().split()]
    p = [int(x) for x in open(p_path).read().split()]
    if len(u) != len(p):
        sys.exit(f"bench_ratio: {len(u)} unpatched and {len(p)} patched layouts")
    mu, mp = statistics.fmean(u), statistics.fmean(p)
    if len(u) < 2:
        print(f"{api:<11} {mode:<7} {stats:<5} {mu / per:12.0f} {mp / per:12.0f} {mp / mu:8.4f}  (one layout: no interval)"
              f"  {(mp - mu) / per:+9.0f}  per {unit}  {label}")
        return
    ratio, low, high, added, half = paired(u, p)
    ulow, uhigh = unpaired(u, p)
    print(f"{api:<11} {mode:<7} {stats:<5} {mu / per:12.0f} {mp / per:12.0f} {ratio:8.4f}  {low:.4f} to {high:.4f}"
          f"  {added / per:+9.0f} ± {half / per:<7.0f}  ({ulow:.4f} to {uhigh:.4f})  per {unit}  {label}")


if __name__ == "__main__":
    main()
