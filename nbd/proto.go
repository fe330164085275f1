package nbd

// Constants of the NBD protocol (https://github.com/NetworkBlockDevice/nbd,
// doc/proto.md), fixed newstyle negotiation and the transmission phase.
const (
	magicNBD       = 0x4e42444d41474943 // "NBDMAGIC"
	magicOpt       = 0x49484156454F5054 // "IHAVEOPT"
	magicOptReply  = 0x0003e889045565a9
	magicRequest   = 0x25609513
	magicSimple    = 0x67446698
	magicStructure = 0x668e33ef

	// Handshake flags (server) and client flags.
	flagFixedNewstyle = 1 << 0
	flagNoZeroes      = 1 << 1

	// Transmission flags.
	flagHasFlags     = 1 << 0
	flagReadOnly     = 1 << 1
	flagSendFlush    = 1 << 2
	flagSendDF       = 1 << 7
	flagCanMultiConn = 1 << 8
	flagSendCache    = 1 << 10

	// Options.
	optExportName      = 1
	optAbort           = 2
	optList            = 3
	optStartTLS        = 5
	optInfo            = 6
	optGo              = 7
	optStructuredReply = 8
	optListMetaContext = 9
	optSetMetaContext  = 10

	// Option replies.
	repAck         = 1
	repServer      = 2
	repInfo        = 3
	repMetaContext = 4
	repErrUnsup    = 1<<31 + 1
	repErrPolicy   = 1<<31 + 2
	repErrInvalid  = 1<<31 + 3
	repErrUnknown  = 1<<31 + 6

	// NBD_OPT_INFO / NBD_OPT_GO information types.
	infoExport      = 0
	infoName        = 1
	infoDescription = 2
	infoBlockSize   = 3

	// Commands and command flags.
	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdCache       = 5
	cmdWriteZeroes = 6
	cmdBlockStatus = 7
	cmdFlagDF      = 1 << 2
	cmdFlagReqOne  = 1 << 3

	// Structured reply types and flags.
	replyFlagDone       = 1 << 0
	replyOffsetData     = 1
	replyOffsetHole     = 2
	replyBlockStatus    = 5
	replyError          = 1<<15 + 1
	replyErrorOffset    = 1<<15 + 2
	stateHole           = 1 << 0
	stateZero           = 1 << 1
	baseAllocation      = "base:allocation"
	baseAllocationID    = 1
	maxPayload          = 32 << 20 // largest read served, bytes
	maxOptionLen        = 64 << 10 // largest option data accepted, bytes
	defaultPreferred    = 4096
	errEPERM            = 1
	errEIO              = 5
	errEINVAL           = 22
	errENOSPC           = 28
	errEOVERFLOW        = 75
	errENOTSUP          = 95
	errESHUTDOWN        = 108
	zeroPadAfterExport  = 124
	maxExtentDescriptor = 1<<32 - 4096 // longest extent in one descriptor, bytes
)
