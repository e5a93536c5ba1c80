; counter: one more cell lights up every frame (16 cells, then it starts over on a cleared row)
        .org $0200
        lda #0
        sta $10         ; cells lit so far
frame:  ldx $10
        bne light
        lda #0          ; a new round: clear the row
clear:  sta $0500,x
        inx
        cpx #16
        bne clear
        ldx #0
light:  lda #1
        sta $0500,x     ; light cell x
        inx
        txa
        and #$0f
        sta $10
        lda #1
        sta $0D         ; tick: frame done
wait:   lda $0D
        bne wait        ; until the host clears it
        jmp frame
