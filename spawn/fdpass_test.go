package spawn

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// receiveFD receives one file descriptor sent with SCM_RIGHTS on the unix
// socket sock (as OpListenSend and OpOpenSend send it). It does not block: the child sent
// it before it execed, that is before Start returned.
func receiveFD(sock int) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("receive descriptor: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receive descriptor: no descriptor in the message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("receive descriptor: expected one descriptor")
	}
	return fds[0], nil
}
