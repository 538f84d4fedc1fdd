import csv,glob,statistics as st,collections
d=collections.defaultdict(list)
for f in sorted(glob.glob('/work/main/docs/bench/s45/push_ab/*.csv')):
    w,i,t=f.split('/')[-1][:-4].split('_')
    for r in csv.DictReader(open(f)):
        d[(t,w,r['algorithm'],int(r['bytes']))].append(float(r['time_us']))
print("median us over runs: -t (t) and not (n); direct pushing / pulling, ring in the pushing runs")
for t in 'tn':
    for b in sorted({k[3] for k in d}):
        dp=st.median(d[(t,'push','direct',b)]); dl=st.median(d[(t,'pull','direct',b)]); rg=st.median(d[(t,'push','ring',b)])
        print(f"{t} {b:9d}  direct push {dp:8.1f}  pull {dl:8.1f}  ({dl/dp:4.2f}x)   ring {rg:8.1f}  (push vs ring {rg/dp:4.2f}x)")
