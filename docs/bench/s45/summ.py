import csv,sys,math,statistics as st
pair={'reduce_scatter':'reduce_scatter_block','allgatherv':'allgather'}
for fn in sys.argv[1:]:
    d={(r['collective'],r['bytes'],r['algorithm']):r for r in csv.DictReader(open(fn))}
    res={}
    for (c,s,a),r in d.items():
        if c not in pair or a.startswith('auto') or int(s)<131072: continue
        b=d.get((pair[c],s,a))
        if not b: continue
        meas=float(r['time_us'])/float(b['time_us']); mod=float(r['model_us'])/float(b['model_us'])
        x=res.setdefault(c,[[],[],0,0,0])
        x[0].append(abs(math.log(mod/meas))); x[1].append(abs(math.log(1/meas)))
        x[2]+=1; x[3]+= abs(mod/meas-1)<=0.2; x[4]+= abs(1/meas-1)<=0.2
    for c,x in res.items():
        print(f"{fn.split('/')[-1]} {c}: {x[2]} rows >=128 KiB; unequal/equal ratio within 20% of measured: new {x[3]}, equal-share pricing {x[4]}; median |log error| new {st.median(x[0]):.3f} equal {st.median(x[1]):.3f}")
