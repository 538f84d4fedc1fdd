import sys,re,statistics as S
d={}
for l in open(sys.argv[1]):
    m=re.match(r'r(\d+) (old|new) (\S+) (\S+) (\S+): libdpcoll\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(-?\d+)%\s+([\d.]+)',l)
    if not m: continue
    r,e,c,s,k,tc,tp,tt,ov,cpu=m.groups()
    d.setdefault((c,s,k),{}).setdefault(e,[]).append((float(tc),float(tp),float(tt),float(ov),float(cpu)))
print("%-10s %4s %5s | %-15s | %-15s | %-15s | %s"%("coll","size","kind","t_comm old/new","t_total old/new","overlap old/new","extra_cpu old/new"))
for k in sorted(d):
    o,n=d[k].get('old',[]),d[k].get('new',[])
    m=lambda v,i: S.median([x[i] for x in v]) if v else float('nan')
    print("%-10s %4s %5s | %6.2f %6.2f | %6.2f %6.2f | %5.0f%% %5.0f%% | %5.2f %5.2f  (n=%d)"%(k[0],k[1],k[2],m(o,0),m(n,0),m(o,2),m(n,2),m(o,3),m(n,3),m(o,4),m(n,4),len(n)))
