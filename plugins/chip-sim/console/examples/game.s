; game: a bar grows every frame (two steps while bit 0 of the controller byte is held); when
; it reaches 8 cells the game is over: status ($03) is raised and the screen fills with walls
        .org $0200
        lda #0
        sta $10         ; score
        sta $03         ; status: playing
frame:  lda $03
        bne done        ; over: nothing moves any more
        ldx $10
        lda #1
        sta $0500,x
        inc $10
        lda $02
        and #1
        beq noboost
        inc $10
noboost: lda $10
        cmp #8
        bcc done
        lda #1
        sta $03         ; status: game over
        ldx #0
        lda #3
fill:   sta $0500,x
        inx
        cpx #16
        bne fill
done:   lda #1
        sta $0D         ; tick
wait:   lda $0D
        bne wait
        jmp frame
