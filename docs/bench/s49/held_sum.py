import sys, re, statistics as S
d={}
for f in sys.argv[1:]:
    for l in open(f):
        m=re.match(r'(old|new) r(\d+) coll (\d) (\d+) B: t_comm (\d+) us; longest MPI_Test ([\d.]+) us; 8 B side allreduce ([\d.]+)',l)
        if not m: continue
        e,r,c,b,t,h,sd=m.groups()
        d.setdefault((int(c),int(b)),{}).setdefault(e,[]).append((float(t),float(h),float(sd)))
names=['allreduce','bcast','allgather','alltoall']
print("%-10s %9s | %-25s | %-25s | %s"%("coll","bytes","longest MPI_Test old/new","t_comm old/new","side 8B old/new"))
for k in sorted(d):
    o,n=d[k].get('old',[]),d[k].get('new',[])
    med=lambda v,i: S.median([x[i] for x in v]) if v else float('nan')
    print("%-10s %9d | %8.0f %8.0f (n=%d) | %8.0f %8.0f | %6.0f %6.0f"%(names[k[0]],k[1],med(o,1),med(n,1),len(n),med(o,0),med(n,0),med(o,2),med(n,2)))
