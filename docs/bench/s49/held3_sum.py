import sys, re, statistics as S
d={}; libs=[]
for l in open(sys.argv[1]):
    m=re.match(r'(\S+) r(\d+) coll (\d) (\d+) B: t_comm (\d+) us; longest MPI_Test ([\d.]+) us; 8 B side allreduce ([\d.]+)',l)
    if not m: continue
    e,r,c,b,t,h,sd=m.groups()
    if e not in libs: libs.append(e)
    d.setdefault((int(c),int(b)),{}).setdefault(e,[]).append((float(t),float(h),float(sd)))
names=['allreduce','bcast','allgather','alltoall']
print("%-10s %9s | longest MPI_Test %s | t_comm %s"%("coll","bytes","/".join(libs),"/".join(libs)))
for k in sorted(d):
    med=lambda e,i: S.median([x[i] for x in d[k].get(e,[])]) if d[k].get(e) else float('nan')
    print("%-10s %9d | %s | %s"%(names[k[0]],k[1]," ".join("%6.0f"%med(e,1) for e in libs)," ".join("%6.0f"%med(e,0) for e in libs)))
