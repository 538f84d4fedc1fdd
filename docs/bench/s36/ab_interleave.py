import csv, glob, math, statistics as st, collections, sys
def load(f):
    return [r for r in csv.DictReader(open(f))]
ref=collections.defaultdict(list)
for f in glob.glob('ref_*.csv'):
    for r in load(f):
        if r['algorithm'].startswith('auto'): continue
        ref[(r['collective'],int(r['bytes']),r['algorithm'])].append(float(r['time_us']))
refm={k:st.median(v) for k,v in ref.items()}
def best(d,c,b):
    cand={a:t for (cc,bb,a),t in d.items() if cc==c and bb==b}
    return min(cand,key=cand.get), cand
for kind in ('old','new'):
    errs=[];agree=0;tot=0;loss=[]; runs=collections.defaultdict(list)
    for f in sorted(glob.glob(kind+'_*.csv')):
        d={}
        for r in load(f):
            if r['algorithm'].startswith('auto'): continue
            k=(r['collective'],int(r['bytes']),r['algorithm'])
            d[k]=float(r['time_us']); runs[k].append(d[k])
            if k in refm: errs.append(abs(math.log(d[k]/refm[k])))
        for (c,b) in {(k[0],k[1]) for k in d}:
            bk,_=best(d,c,b); br,cr=best(refm,c,b)
            tot+=1; agree+= bk==br
            loss.append(cr[bk]/cr[br])
    spread=[abs(math.log(max(v)/min(v))) for v in runs.values()]
    print(f"{kind}: rows vs own-sweep medians: mean |ln| {st.mean(errs):.3f}, median {st.median(errs):.3f}, within 10% {sum(e<math.log(1.1) for e in errs)}/{len(errs)}; "
          f"fastest = own-sweep fastest {agree}/{tot}; its own-sweep time over the fastest's: geo-mean {math.exp(st.mean(map(math.log,loss))):.3f}, worst {max(loss):.2f}; "
          f"max/min over runs per row: median {math.exp(st.median(spread)):.3f}")
