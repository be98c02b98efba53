//! The data path's side channel: the descriptors of shared buffer regions (`buffer::shared`)
//! travel from the session to the worker over a Unix socket (`SCM_RIGHTS`), once per region
//! and worker, so that the pipe carries only small messages and no buffer is ever encoded.
//!
//! The session makes a socket pair when it spawns a worker and gives the worker its end as
//! descriptor [`SOCKET_FD`], saying so in [`SOCKET_ENV`]. Each region goes as one packet: its id
//! (8 bytes, little-endian) with its descriptor attached. The session sends a region's packet
//! before the first request that names it, so the worker finds it waiting; a region it cannot
//! find is an error, not a wait.
//!
//! [`Regions`] is the worker's side, shared by the real worker and the fake one: the regions it
//! was given, mapped, and let go when the session says it freed them.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

use memmap2::MmapMut;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketFlags, SocketType, recvmsg, sendmsg, socketpair,
};

/// The worker's end of the socket, as the worker sees it.
pub const SOCKET_FD: i32 = 3;
/// Set (to [`SOCKET_FD`]) in the worker's environment when the socket is there.
pub const SOCKET_ENV: &str = "GRIDLAB_WORKER_SOCKET";

/// A connected pair: the session's end and the worker's.
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)?)
}

/// Send region `id`'s descriptor.
pub fn send_region(socket: BorrowedFd<'_>, id: u64, fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [fd];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for a descriptor in the message"));
    }
    let bytes = id.to_le_bytes();
    let sent = sendmsg(socket, &[io::IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL)?;
    if sent != bytes.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "a region's packet went out short"));
    }
    Ok(())
}

/// The next region waiting on the socket, or `None` when none is.
fn recv_region(socket: BorrowedFd<'_>) -> io::Result<Option<(u64, OwnedFd)>> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut bytes = [0u8; 8];
    let got = match recvmsg(socket, &mut [io::IoSliceMut::new(&mut bytes)], &mut control, RecvFlags::DONTWAIT) {
        Ok(got) => got,
        Err(rustix::io::Errno::AGAIN) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if got.bytes == 0 {
        return Ok(None);
    }
    let fd = control.drain().find_map(|m| match m {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    });
    match (got.bytes, fd) {
        (8, Some(fd)) => Ok(Some((u64::from_le_bytes(bytes), fd))),
        _ => Err(io::Error::new(io::ErrorKind::InvalidData, "a region's packet without its id or descriptor")),
    }
}

/// The worker's shared regions: each mapped once, at its first use.
pub struct Regions {
    socket: Option<OwnedFd>,
    maps: HashMap<u64, MmapMut>,
}

impl Regions {
    /// The socket the session gave this process, if [`SOCKET_ENV`] says there is one.
    pub fn from_env() -> Regions {
        let socket =
            std::env::var(SOCKET_ENV).ok().and_then(|v| v.parse::<i32>().ok()).filter(|fd| *fd >= 0).map(|fd| {
                // SAFETY: the session put its end of the socket at this descriptor for this process
                // alone (client.rs), and nothing else here takes it.
                unsafe { OwnedFd::from_raw_fd(fd) }
            });
        Regions { socket, maps: HashMap::new() }
    }

    /// Region `id`, mapped: taken from the socket (with any regions sent before it) the first
    /// time. `Ok(None)` when the session never sent it.
    pub fn get(&mut self, id: u64) -> io::Result<Option<&mut MmapMut>> {
        while !self.maps.contains_key(&id) {
            let Some(socket) = &self.socket else {
                return Err(io::Error::other("this worker was started without the socket for shared buffers"));
            };
            let Some((got, fd)) = recv_region(socket.as_fd())? else { return Ok(None) };
            let file = File::from(fd);
            // SAFETY: a region of the session's, which writes it only while this process is not
            // working on it (between requests); the worker copies out of and into it in place.
            let map = unsafe { MmapMut::map_mut(&file)? };
            self.maps.insert(got, map);
        }
        Ok(self.maps.get_mut(&id))
    }

    /// Whether region `id` is mapped here.
    pub fn contains(&self, id: u64) -> bool {
        self.maps.contains_key(&id)
    }

    /// Let region `id` go; its mapping is returned so that the caller can undo what it did to
    /// it (the real worker unpins it) before it is unmapped.
    pub fn release(&mut self, id: u64) -> Option<MmapMut> {
        self.maps.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::shared::SharedBytes;

    #[test]
    fn a_region_sent_over_the_socket_maps_the_same_memory() {
        let (session, worker) = pair().unwrap();
        let mut a = SharedBytes::zeroed(8192).unwrap();
        a[10] = 99;
        send_region(session.as_fd(), a.id(), a.fd()).unwrap();
        let mut regions = Regions { socket: Some(worker), maps: HashMap::new() };
        let map = regions.get(a.id()).unwrap().expect("the region arrived");
        assert_eq!(map[10], 99);
        // A write on the worker's side is seen by the session's mapping.
        map[11] = 5;
        assert_eq!(a[11], 5);
        // A region never sent is an answer, not a wait.
        assert!(regions.get(a.id() + 1_000_000).unwrap().is_none());
        assert!(regions.release(a.id()).is_some());
        assert!(!regions.contains(a.id()));
    }
}
