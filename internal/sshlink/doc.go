// Package sshlink is bureau's kept SSH connection to one libvirt host.
//
// libvirt carries domains, networks and storage, but not everything bureau
// does on a host: its own nftables tables (`nft -f -`), checks for the
// tools it needs (`command -v nft`, `ip -j addr`), file work in the
// desktops folder, and the console, a unix socket per desktop that QEMU
// listens on. Locally bureau does these itself; for a remote host it keeps
// one SSH connection beside its libvirt one and sends them through it
// (docs/research/multi-host.md §5).
//
// The connection is pinned to the host key bureau was given (no trust on
// first use, and the host cannot negotiate another key type), authenticates
// with bureau's own client key (ClientKey), and is watched with
// keepalive@openssh.com requests, since SSH channels have no deadlines:
// a host that stops answering is noticed within seconds and the link is
// closed (Link.Done). Kept dials again on the next use.
//
// Commands run through the remote user's login shell, whose rc files may
// cost a noticeable time per command (~170 ms seen with a pyenv init in
// root's .bashrc), so keep this for firewall changes and checks, never for
// anything per frame.
package sshlink
