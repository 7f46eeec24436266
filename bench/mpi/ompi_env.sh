# ompi_env.sh - sourced by the scripts beside it: Open MPI from the Debian
# packages staged in $D/debs, unpacked once into OMPI_ROOT (default
# /tmp/ompi), and the environment that runs it there (PATH, libraries, and
# the transports that work without RDMA hardware).  Expects D, the staged
# folder.
O=${OMPI_ROOT:-/tmp/ompi}
mkdir -p "$O"
if [ ! -x "$O/usr/bin/orterun" ]; then
  for d in "$D"/debs/*.deb; do
    if command -v dpkg >/dev/null; then dpkg -x "$d" "$O"; else
      t=$(mktemp -d); (cd "$t" && ar x "$d" && tar -xf data.tar.* -C "$O"); rm -rf "$t"; fi
  done
fi
L=$O/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=$O/usr PMIX_INSTALL_PREFIX=$O/usr
export PATH=$O/usr/bin:$PATH LD_LIBRARY_PATH=$L:$L/openmpi/lib:$L/pmix2/lib:${LD_LIBRARY_PATH:-}
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_osc=sm,pt2pt
