package landlock

// WriterRights are the rights a writer confined to some directories gets
// beneath each (spawn.RestrictThread): what a program may do to the files
// beneath a writable root, as far as this kernel's Landlock knows them.
func WriterRights(abi int) AccessFS { return writeRights & fsRightsAt(abi) }
