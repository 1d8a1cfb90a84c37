// Package qcow2 reads the cluster mapping of an internal qcow2 snapshot
// straight from the image file and serves the snapshot's content as
// fixed-size cells for an incremental backup.
//
// # Why reading a snapshot while the VM runs is safe
//
// An internal snapshot owns a copy of the L1 table and a reference on every
// L2 table and data cluster it maps. qcow2 never modifies a cluster in place
// while its refcount is above one: QEMU only writes in place to clusters
// whose L1/L2 entry carries the COPIED flag (bit 63), and taking a snapshot
// clears that flag on every entry it shares. Any later guest write to a
// shared cluster allocates a new cluster (copy-on-write) and rewrites the
// active image's (likewise copied) L2 table, never the snapshot's. Taking
// the snapshot (QMP blockdev-snapshot-internal-sync or qemu-img snapshot -c)
// drains and flushes the image first, so the snapshot's clusters are on
// disk. Reading them at their host offsets through an ordinary read-only
// file descriptor therefore yields a consistent point-in-time image even
// while QEMU keeps writing the active image. This holds with
// lazy_refcounts=on: lazy refcounts delay refcount updates for new
// allocations, but the COPIED flags, which decide in-place writes, are
// always kept accurate for shared clusters. The dirty bit such images carry
// while a VM runs is therefore ignored.
//
// The caller must not delete the snapshots it reads (nor create or delete
// other snapshots of the same image concurrently with [Snapshots],
// [ReadSnapshot] or [NewSource], which read the snapshot table) while a
// [Map] or [Source] is in use: deleting a snapshot frees its clusters for
// reuse.
//
// # Change tracking
//
// Two snapshots of one image map a guest cluster to the same host offset
// exactly when the cluster was not written between them (a write to a
// shared cluster always lands at a new offset). [Source.Changed] compares
// the masked L2 entries of two snapshots cell by cell; both reading as
// zeros also counts as unchanged.
//
// # What is refused
//
// Images with a backing file, an external data file, extended L2 entries
// (subclusters), encryption, unknown incompatible features or the corrupt
// bit are refused with [ErrUnsupported] (the corrupt bit with a plain
// error). Compressed clusters are accepted while reading a map but refused
// with [ErrUnsupported] by [Source.ReadCell]. Both qcow2 version 2 and 3 are
// supported (version 2 has no zero flag). Reads past the end of the file
// return zeros, as in QEMU.
package qcow2

import "errors"

// ErrUnsupported reports an image feature this package does not handle; it
// is wrapped with a message naming the feature.
var ErrUnsupported = errors.New("qcow2: unsupported feature")

// ErrNoSnapshot reports that a named internal snapshot is not in the image;
// it is wrapped with the name.
var ErrNoSnapshot = errors.New("qcow2: no such snapshot")
