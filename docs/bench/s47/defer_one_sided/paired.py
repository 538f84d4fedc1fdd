import csv,statistics as st,collections,sys,glob,re
# usage: paired.py DIR  (files r{round}_e{0,1}.csv)
D=sys.argv[1]
d=collections.defaultdict(dict)
for f in glob.glob(D+'/r*_e*.csv'):
  m=re.search(r'r(\d+)_e(\d)\.csv',f); r,e=int(m.group(1)),int(m.group(2))
  for row in csv.DictReader(open(f)):
    d[(row['collective'],int(row['bytes']),row['algorithm'])][(r,e)]=(float(row['time_us']),float(row['native_us']))
print("%-22s %9s %-26s %8s %8s %8s  %s"%("coll","bytes","algorithm","old_us","new_us","paired","new/old per round"))
for k in sorted(d):
  v=d[k]; rounds=sorted(set(r for r,e in v if (r,0) in v and (r,1) in v))
  if not rounds: continue
  rat=[v[(r,1)][0]/v[(r,0)][0] for r in rounds]
  o=st.median(v[(r,0)][0] for r in rounds); n=st.median(v[(r,1)][0] for r in rounds)
  nat=st.median([v[(r,e)][1] for r in rounds for e in (0,1)])
  print("%-22s %9d %-26s %8.1f %8.1f %8.2f  %s  (MPICH %.1f: %.2fx -> %.2fx)"%(k[0],k[1],k[2],o,n,st.median(rat)," ".join("%.2f"%x for x in rat),nat,nat/o,nat/n))
