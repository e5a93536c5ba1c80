; sprite: a ball on a 16x8 screen, moved by the controller byte at $02
; (bit 0 right, bit 1 left, bit 2 down, bit 3 up), wrapping at the edges
        .org $0200
        lda #0
        sta $10         ; x
        sta $11         ; y
frame:  jsr cell
        lda #0
        sta $0500,x     ; erase the ball
        lda $02         ; input
        lsr
        bcc noright
        inc $10
noright: lsr
        bcc noleft
        dec $10
noleft: lsr
        bcc nodown
        inc $11
nodown: lsr
        bcc noup
        dec $11
noup:   lda $10
        and #$0f
        sta $10
        lda $11
        and #$07
        sta $11
        jsr cell
        lda #2
        sta $0500,x     ; draw it
        lda #1
        sta $0D         ; tick
wait:   lda $0D
        bne wait
        jmp frame
; X = y * 16 + x
cell:   lda $11
        asl
        asl
        asl
        asl
        ora $10
        tax
        rts
