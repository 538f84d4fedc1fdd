import csv,sys
pair={'reduce_scatter':'reduce_scatter_block','allgatherv':'allgather'}
for fn in sys.argv[1:]:
    print(fn)
    d={(r['collective'],r['bytes'],r['algorithm']):r for r in csv.DictReader(open(fn))}
    for (c,s,a),r in sorted(d.items(), key=lambda x:(x[0][0],x[0][2],int(x[0][1]))):
        if c not in pair or a.startswith('auto'): continue
        b=d.get((pair[c],s,a))
        if not b: continue
        tv,tb=float(r['time_us']),float(b['time_us']); mv,mb=float(r['model_us']),float(b['model_us'])
        print(f"{c:15s} {a:18s} {int(s):9d}  measured v/block {tv/tb:5.2f}  model v/block {mv/mb:5.2f}   block model/meas {mb/tb:5.2f}  v model/meas {mv/tv:5.2f}")
