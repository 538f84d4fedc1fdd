! A Fortran program with no knowledge of libdpcoll, built twice by run.sh:
! with `use mpi` (fortran_mpi, run with LD_PRELOAD=libdpcoll.so) and with
! `use mpi_f08` (-DF08: fortran_f08, linked with -ldpcoll ahead of the MPI
! library). Every result is checked against its closed form
! (integer-valued data: exact in any order of summation).
!
! MPICH's mpi_f08 bindings call PMPI_Init, PMPI_Wait, PMPI_Start ...
! directly, past the shim (src/pmpi/fortran.c): fortran_f08 shows that
! libdpcoll starts anyway, that a nonblocking collective of ours completes
! in MPI_Wait, and that persistent ones of ours start and end through every
! request call (libdpcoll's own mpi_f08 bindings of them:
! src/pmpi/fortran_requests.c), mixed with a request of the MPI library's,
! with statuses, flags and indices as Fortran has them. run.sh's stats
! check shows where each collective ran.
#ifdef F08
#define MPI_MODULE mpi_f08
#define COMM_T type(MPI_Comm)
#define REQUEST_T type(MPI_Request)
#define STATUSES_T type(MPI_Status) :: st, sts(4)
#define ST_SOURCE st%MPI_SOURCE
#define STS_SOURCE(k) sts(k)%MPI_SOURCE
#define STS_TAG(k) sts(k)%MPI_TAG
#define NAME 'fortran_f08'
#else
#define MPI_MODULE mpi
#define COMM_T integer
#define REQUEST_T integer
#define STATUSES_T integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4)
#define ST_SOURCE st(MPI_SOURCE)
#define STS_SOURCE(k) sts(MPI_SOURCE, k)
#define STS_TAG(k) sts(MPI_TAG, k)
#define NAME 'fortran_mpi'
#endif
program fortran_test
  use MPI_MODULE
  implicit none
  integer, parameter :: n = 1000, big = 300000, m = 7
  integer :: r, p, i, j, k, provided, nbad, nchecks, total
  real, allocatable :: a(:), b(:)
  double precision :: d(n)
  integer :: ia(n), ib(n)
  integer, allocatable :: sa(:), ga(:)
  integer(kind=8) :: la(n), lb(n)
  double complex :: za(n), zb(n)
  integer :: ierr, tok, idx, outc, ndone, idxs(4), seen(4)
  logical :: flag
  COMM_T :: dup
  REQUEST_T :: req, preq(4)
  STATUSES_T
  nbad = 0
  nchecks = 0
  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  allocate(a(big), b(big), sa(p * m), ga(p * m))

  ! REAL sum, small and large (other algorithms): r + 1 + i summed over ranks
  do i = 1, big
    a(i) = real(r + 1 + mod(i, 1000))
  end do
  call MPI_Allreduce(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(b(1:n) == [(real(p * (p + 1) / 2 + p * mod(i, 1000)), i = 1, n)]), &
             'MPI_Allreduce REAL sum')
  call MPI_Allreduce(a, b, big, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(b == [(real(p * (p + 1) / 2 + p * mod(i, 1000)), i = 1, big)]), &
             'MPI_Allreduce REAL sum, 1.2 MB')

  ! DOUBLE PRECISION max in place: r * i, largest from rank p - 1
  d = [(dble(r * i), i = 1, n)]
  call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(all(d == [(dble((p - 1) * i), i = 1, n)]), 'MPI_Allreduce DOUBLE PRECISION max, in place')

  ! INTEGER*8 sum
  la = [(int(r + i, 8), i = 1, n)]
  call MPI_Allreduce(la, lb, n, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(lb == [(int(p * i + p * (p - 1) / 2, 8), i = 1, n)]), 'MPI_Allreduce INTEGER8 sum')

  ! DOUBLE COMPLEX sum: (r + 1, i r)
  za = [(dcmplx(r + 1, i * r), i = 1, n)]
  call MPI_Allreduce(za, zb, n, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(zb == [(dcmplx(p * (p + 1) / 2, i * p * (p - 1) / 2), i = 1, n)]), &
             'MPI_Allreduce DOUBLE COMPLEX sum')

  ! reduce-scatter: element k of p*m holds k + r; rank r keeps block r
  sa = [(i + r, i = 1, p * m)]
  call MPI_Reduce_scatter_block(sa, ib, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(ib(1:m) == [(p * (r * m + i) + p * (p - 1) / 2, i = 1, m)]), &
             'MPI_Reduce_scatter_block INTEGER sum')

  ! allgather: rank j sends 100 j + 1 .. 100 j + m
  ia(1:m) = [(100 * r + i, i = 1, m)]
  call MPI_Allgather(ia, m, MPI_INTEGER, ga, m, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(ga == [((100 * j + i, i = 1, m), j = 0, p - 1)]), 'MPI_Allgather INTEGER')

  ! bcast from the last rank
  d = -1d0
  if (r == p - 1) d = [(dble(i) / 4d0, i = 1, n)]
  call MPI_Bcast(d, n, MPI_DOUBLE_PRECISION, p - 1, MPI_COMM_WORLD, ierr)
  call check(all(d == [(dble(i) / 4d0, i = 1, n)]), 'MPI_Bcast DOUBLE PRECISION')

  ! alltoall: rank r sends 1000 r + j to rank j
  sa(1:p) = [(1000 * r + j, j = 0, p - 1)]
  call MPI_Alltoall(sa, 1, MPI_INTEGER, ga, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(ga(1:p) == [(1000 * j + r, j = 0, p - 1)]), 'MPI_Alltoall INTEGER')

  ! nonblocking (a generalized request: PMPI_Wait would complete it too)
  ia = [(r * i, i = 1, n)]
  call MPI_Iallreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call check(all(ib == [(i * p * (p - 1) / 2, i = 1, n)]), 'MPI_Iallreduce INTEGER sum + MPI_Wait')

  ! persistent (mpi_f08's MPI_Start and MPI_Wait: ours, fortran_requests.c)
  call MPI_Allreduce_init(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  do j = 1, 3
    ia = [(r * i + j, i = 1, n)]
    call MPI_Start(req, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    call check(all(ib == [(i * p * (p - 1) / 2 + p * j, i = 1, n)]), &
               'MPI_Allreduce_init INTEGER sum + MPI_Start + MPI_Wait')
  end do
  call MPI_Request_free(req, ierr)
  call MPI_Allreduce_init(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  ia = [(r * i + 5, i = 1, n)]
  call MPI_Start(req, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Request_get_status(req, flag, st, ierr)
  end do
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call check(all(ib == [(i * p * (p - 1) / 2 + p * 5, i = 1, n)]), &
             'MPI_Allreduce_init + MPI_Start + MPI_Request_get_status + MPI_Test')
  call MPI_Request_free(req, ierr)

  ! three persistent collectives and a receive of the library's, started
  ! and ended together, four ways: the inputs change at every start (MPICH
  ! 4.0.2's own persistent allgather is wrong from the second start at 2
  ! ranks), and each result has its closed form
  call MPI_Bcast_init(d, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, MPI_INFO_NULL, preq(1), ierr)
  call MPI_Allgather_init(ia, m, MPI_INTEGER, ga, m, MPI_INTEGER, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, preq(2), ierr)
  call MPI_Reduce_scatter_block_init(sa, ib, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                     MPI_INFO_NULL, preq(3), ierr)
  do j = 1, 4
    d = -1d0
    if (r == 0) d = [(dble(i + j), i = 1, n)]
    ia(1:m) = [(100 * r + i + 1000 * j, i = 1, m)]
    sa = [(i + r + j, i = 1, p * m)]
    ib(1:m) = -1
    tok = -1
    call MPI_Irecv(tok, 1, MPI_INTEGER, r, 7, MPI_COMM_WORLD, preq(4), ierr)
    call MPI_Startall(3, preq, ierr)
    call MPI_Send(j, 1, MPI_INTEGER, r, 7, MPI_COMM_WORLD, ierr)
    select case (j)
    case (1)
      call MPI_Waitall(4, preq, sts, ierr)
      call check(STS_SOURCE(4) == r .and. STS_TAG(4) == 7, &
                 'MPI_Waitall: the receive''s status')
    case (2)
      flag = .false.
      do while (.not. flag)
        call MPI_Testall(4, preq, flag, MPI_STATUSES_IGNORE, ierr)
      end do
    case (3)
      seen = 0
      do i = 1, 4
        call MPI_Waitany(4, preq, idx, st, ierr)
        if (idx >= 1 .and. idx <= 4) seen(idx) = seen(idx) + 1
        if (idx == 4) call check(ST_SOURCE == r, 'MPI_Waitany: the receive''s status')
      end do
      call MPI_Waitany(4, preq, idx, MPI_STATUS_IGNORE, ierr)
#ifndef F08
      ! (MPICH 4.0.2's `use mpi` binding adds 1 to it: pmodels/mpich#6402)
      if (idx == MPI_UNDEFINED + 1) idx = MPI_UNDEFINED
#endif
      call check(all(seen == 1) .and. idx == MPI_UNDEFINED, &
                 'MPI_Waitany: indices 1 to 4 once each, then MPI_UNDEFINED')
    case (4)
      seen = 0
      ndone = 0
      do while (ndone < 4)
        call MPI_Testsome(4, preq, outc, idxs, sts, ierr)
        if (outc == MPI_UNDEFINED) exit
        do i = 1, outc
          if (idxs(i) >= 1 .and. idxs(i) <= 4) seen(idxs(i)) = seen(idxs(i)) + 1
        end do
        ndone = ndone + outc
      end do
      call MPI_Waitsome(4, preq, outc, idxs, sts, ierr)
      call check(all(seen == 1) .and. outc == MPI_UNDEFINED, &
                 'MPI_Testsome: indices 1 to 4 once each; MPI_Waitsome then MPI_UNDEFINED')
    end select
    call check(all(d == [(dble(i + j), i = 1, n)]), 'MPI_Bcast_init DOUBLE PRECISION')
    call check(all(ga == [((100 * i + k + 1000 * j, k = 1, m), i = 0, p - 1)]), &
               'MPI_Allgather_init INTEGER')
    call check(all(ib(1:m) == [(p * (r * m + i + j) + p * (p - 1) / 2, i = 1, m)]), &
               'MPI_Reduce_scatter_block_init INTEGER sum')
    call check(tok == j, 'MPI_Irecv among them')
  end do
  do i = 1, 3
    call MPI_Request_free(preq(i), ierr)
  end do

  ! a new communicator (mpi_f08's MPI_Comm_dup is PMPI_Comm_dup)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Allreduce(a, b, n, MPI_REAL, MPI_MIN, dup, ierr)
  call check(all(b(1:n) == [(real(1 + mod(i, 1000)), i = 1, n)]), 'MPI_Allreduce REAL min on a duplicate')
  call MPI_Comm_free(dup, ierr)

  call MPI_Allreduce(nbad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (r == 0) print '(a, i0, a, i0, a, i0, a)', NAME // ': ', nchecks, ' checks a rank, ', &
                    total, ' failed (', p, ' ranks)'
  deallocate(a, b, sa, ga)
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    nchecks = nchecks + 1
    if (.not. ok) then
      nbad = nbad + 1
      print '(a, i0, 2a)', 'FAILED on rank ', r, ': ', what
    end if
  end subroutine
end program
