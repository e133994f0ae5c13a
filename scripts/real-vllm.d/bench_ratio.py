"""The ratio line of scripts/bench-instructions: patched over unpatched
mean counts, from one count per type-cache layout (a line each in the two
files), with a 95 % interval for the ratio (delta method, normal
approximation; the layouts of the two variants are independent draws).

    python bench_ratio.py UNPATCHED.counts PATCHED.counts PER API MODE STATS UNIT
"""

import math
import statistics
import sys


def main():
    u_path, p_path, per, api, mode, stats, unit = sys.argv[1:8]
    per = int(per)
    u = [int(x) for x in open(u_path).read().split()]
    p = [int(x) for x in open(p_path).read().split()]
    mu, mp = statistics.fmean(u), statistics.fmean(p)
    ratio = mp / mu
    if len(u) > 1 and len(p) > 1:
        # var(p/u) ~ ratio^2 (se_p^2/mp^2 + se_u^2/mu^2)
        se = ratio * math.sqrt(statistics.variance(p) / len(p) / mp**2 + statistics.variance(u) / len(u) / mu**2)
        interval = f"{ratio - 1.96 * se:.4f} to {ratio + 1.96 * se:.4f}"
    else:
        interval = "(one layout: none)"
    print(f"{api:<11} {mode:<7} {stats:<5} {mu / per:14.0f} {mp / per:14.0f} {ratio:8.4f}  {interval}   per {unit}")


if __name__ == "__main__":
    main()
