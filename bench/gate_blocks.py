#!/usr/bin/env python3
"""gate_blocks.py LOG... - how well bench/gpu_gate.py's per-process ratio
estimates the traced/untraced step, from the per-block times its logs
print (the `blocks +a -b ...` lines of $OUT/bench.log): the spread over
processes of one config in one run for several estimators, a split-half
test (is a process's ratio its own, or block noise?) and the spread
against the number of blocks.  Default: bench/data/gate-*.log (the
per-process lines of the eighth session's seven runs, BENCHMARKS.md)."""
import sys
import glob
import math
import os
import re
import statistics as st
rows=[]
for f in (sys.argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'gate-*.log')))):
    run=f
    for ln in open(f):
        m=re.match(r'^(\S+) \(gpu (\d)\): on ([\d.]+) / off ([\d.]+) ms = ([\d.]+);.* blocks (.*)$',ln)
        if not m: continue
        bl=[(t[0]=='+', float(t[1:])) for t in m.group(6).split()]
        rows.append((run,m.group(1),float(m.group(5)),bl))
def est_pairs(bl):
    # each on block against the mean of its adjacent off blocks
    rs=[]
    for i,(on,v) in enumerate(bl):
        if not on: continue
        nb=[bl[j][1] for j in (i-1,i+1) if 0<=j<len(bl) and not bl[j][0]]
        if nb: rs.append(v/st.mean(nb))
    return rs
def e_med(bl): return st.median(est_pairs(bl))
def e_geo(bl):
    r=est_pairs(bl); return math.exp(st.mean(math.log(x) for x in r))
def e_blockmed(bl):
    on=[v for o,v in bl if o]; off=[v for o,v in bl if not o]; return st.median(on)/st.median(off)
def e_min(bl):
    on=[v for o,v in bl if o]; off=[v for o,v in bl if not o]; return min(on)/min(off)
def e_trim(bl):
    r=sorted(est_pairs(bl)); k=len(r)//4; r=r[k:len(r)-k] or r; return st.mean(r)
ests={'current':None,'pairs-median':e_med,'pairs-geomean':e_geo,'block-median':e_blockmed,'min/min':e_min,'pairs-trimmed':e_trim}
groups={}
for run,cfg,r,bl in rows:
    groups.setdefault((run,cfg),[]).append((r,bl))
print("%-16s %s"%("estimator","pooled within-group SD (groups with >=5 procs), mean of group medians"))
for name,fn in ests.items():
    sds=[];meds=[]
    for k,v in groups.items():
        if len(v)<5: continue
        xs=[r if fn is None else fn(bl) for r,bl in v]
        sds.append(st.stdev(xs)); meds.append(st.median(xs))
    print("%-16s SD %.4f  (n groups %d)  mean median %.4f"%(name, math.sqrt(st.mean(s*s for s in sds)), len(sds), st.mean(meds)))
# split-half: is a process's ratio its own (layout) or noise?
a=[];b=[]
for run,cfg,r,bl in rows:
    if len(bl)<16: continue
    h1=est_pairs(bl[:8]); h2=est_pairs(bl[8:])
    if h1 and h2: a.append(st.median(h1)); b.append(st.median(h2))
ma,mb=st.mean(a),st.mean(b)
cov=sum((x-ma)*(y-mb) for x,y in zip(a,b))/(len(a)-1)
print("split-half n=%d corr %.3f  sd halves %.4f %.4f  sd of diff %.4f"%(len(a),cov/(st.stdev(a)*st.stdev(b)),st.stdev(a),st.stdev(b),st.stdev([x-y for x,y in zip(a,b)])))
# how the per-process estimate's spread falls with blocks (pairs-median; first k blocks)
for k in (4,8,12,16):
    sds=[]
    for key,v in groups.items():
        if len(v)<5: continue
        xs=[st.median(est_pairs(bl[:k])) for r,bl in v if len(bl)>=k]
        sds.append(st.stdev(xs))
    print("first %2d blocks: within-group SD %.4f"%(k, math.sqrt(st.mean(s*s for s in sds))))
