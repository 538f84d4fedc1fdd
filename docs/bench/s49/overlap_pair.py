import sys,re,statistics as S
d={}
for f in sys.argv[1:]:
  for l in open(f):
    m=re.match(r'r(\d+) (old|new) (\S+) (\S+) (\S+): libdpcoll\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)',l)
    if not m: continue
    r,e,c,s,k,tc,tp,tt=m.groups()
    d.setdefault((c,s,k),{})[(f,r,e)]=float(tt)
for k in sorted(d):
    v=d[k]; rat=[v[(f,r,'new')]/v[(f,r,'old')] for (f,r,e) in v if e=='old' and (f,r,'new') in v]
    print(k, "paired t_total new/old median %.2f"%S.median(rat), " ".join("%.2f"%x for x in rat))
