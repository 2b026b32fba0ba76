# bench/shm/plot.gp: the figure of bench/shm/run.sh from dir/medians.csv
# (gnuplot -e "dir='OUT'; window=64" plot.gp): latency and bandwidth by
# size for the three stacks, and the 4-process collectives.
set datafile separator ','
set terminal pngcairo size 1400,1000 font ',10'
set output dir.'/shm-bench.png'
set multiplot layout 2,2 title 'same-host MPI: mtl mrail + shm, mtl mrail + tcp loopback, ob1 + vader (CMA); medians over rounds'
set logscale xy
set xtics ('8' 8, '64' 64, '512' 512, '4K' 4096, '32K' 32768, '256K' 262144, '2M' 2097152, '16M' 16777216)
set xlabel 'message size (bytes)'
set key top left
set grid
f = dir.'/medians.csv'
# Columns: 1 test, 2 np, 3 bytes, 4-6 usec, 7-9 MB/s (shm, tcp, vader).
sel(t, c) = strcol(1) eq t ? column(c) : 1/0
set title 'ping-pong one-way latency, 2 processes'
set ylabel 'us'
plot f skip 1 using 3:(sel('pingpong', 4)) with linespoints title 'mtl mrail + shm', \
     '' skip 1 using 3:(sel('pingpong', 5)) with linespoints title 'mtl mrail + tcp loopback', \
     '' skip 1 using 3:(sel('pingpong', 6)) with linespoints title 'ob1 + vader (CMA)'
set title 'ping-pong bandwidth, 2 processes'
set ylabel 'MB/s'
plot f skip 1 using 3:(sel('pingpong', 7)) with linespoints title 'mtl mrail + shm', \
     '' skip 1 using 3:(sel('pingpong', 8)) with linespoints title 'mtl mrail + tcp loopback', \
     '' skip 1 using 3:(sel('pingpong', 9)) with linespoints title 'ob1 + vader (CMA)'
set title sprintf('streaming bandwidth, window %d + ack, 2 processes', window)
plot f skip 1 using 3:(sel('stream', 7)) with linespoints title 'mtl mrail + shm', \
     '' skip 1 using 3:(sel('stream', 8)) with linespoints title 'mtl mrail + tcp loopback', \
     '' skip 1 using 3:(sel('stream', 9)) with linespoints title 'ob1 + vader (CMA)'
set title 'collectives, 4 processes on 2 cores (us per call)'
set ylabel 'us'
plot f skip 1 using 3:(sel('allreduce', 4)) with linespoints title 'allreduce mrail + shm', \
     '' skip 1 using 3:(sel('allreduce', 6)) with linespoints title 'allreduce ob1 + vader', \
     '' skip 1 using 3:(sel('alltoall', 4)) with linespoints title 'alltoall mrail + shm', \
     '' skip 1 using 3:(sel('alltoall', 6)) with linespoints title 'alltoall ob1 + vader'
unset multiplot
